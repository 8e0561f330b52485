package describe

import (
	"encoding/xml"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/nczarrfs/nczarrfs/nczarr"
)

// maxVRTBands bounds the bands of a VRT; an array with more leading
// elements gets none.
const maxVRTBands = 65536

// gdalTypes are GDAL's raster data types for the numpy kinds and sizes of
// `data` (GDAL 3.6: no Int8 or Float16).
var gdalTypes = map[string]string{
	"u1": "Byte", "b1": "Byte",
	"i2": "Int16", "u2": "UInt16",
	"i4": "Int32", "u4": "UInt32",
	"i8": "Int64", "u8": "UInt64",
	"f4": "Float32", "f8": "Float64",
	"c8": "CFloat32", "c16": "CFloat64",
}

// VRT returns a GDAL raw VRT (VRTRawRasterBand) that describes the array's
// decoded bytes in the file dataPath (relative to the VRT unless
// absolute), so gdalinfo and gdal_translate open the array directly. The
// last two dimensions are the raster's rows and columns; every index of
// the leading dimensions is one band (a 3-D array of shape [t, y, x] has t
// bands). ok is false for arrays GDAL cannot describe this way: fewer than
// 2 dimensions, types GDAL lacks (strings, int8, float16, datetimes), or
// more than 65536 bands.
func VRT(a *nczarr.Array, dataPath string) (vrt []byte, ok bool) {
	if a.Err != nil || a.Scalar || len(a.Meta.Shape) < 2 {
		return nil, false
	}
	dt := DataDType(a)
	gt, known := gdalTypes[dt[1:]]
	if !known {
		return nil, false
	}
	shape := a.Meta.Shape
	rows, cols := shape[len(shape)-2], shape[len(shape)-1]
	bands := int64(1)
	for _, n := range shape[:len(shape)-2] {
		bands *= n
		if bands > maxVRTBands {
			return nil, false
		}
	}
	if rows == 0 || cols == 0 || bands == 0 || rows > math.MaxInt32 || cols > math.MaxInt32 {
		return nil, false
	}
	size := int64(a.ItemSize)
	var nodata string
	if v, ok := noData(a); ok {
		nodata = "    <NoDataValue>" + v + "</NoDataValue>\n"
	}
	rel := "1"
	if strings.HasPrefix(dataPath, "/") {
		rel = "0"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "<VRTDataset rasterXSize=\"%d\" rasterYSize=\"%d\">\n", cols, rows)
	for k := int64(0); k < bands; k++ {
		fmt.Fprintf(&b, "  <VRTRasterBand dataType=\"%s\" band=\"%d\" subClass=\"VRTRawRasterBand\">\n", gt, k+1)
		if dt == "|i1" {
			b.WriteString("    <Metadata domain=\"IMAGE_STRUCTURE\"><MDI key=\"PIXELTYPE\">SIGNEDBYTE</MDI></Metadata>\n")
		}
		b.WriteString(nodata)
		fmt.Fprintf(&b, "    <SourceFilename relativeToVRT=\"%s\">%s</SourceFilename>\n", rel, xmlEscape(dataPath))
		fmt.Fprintf(&b, "    <ImageOffset>%d</ImageOffset>\n", k*rows*cols*size)
		fmt.Fprintf(&b, "    <PixelOffset>%d</PixelOffset>\n", size)
		fmt.Fprintf(&b, "    <LineOffset>%d</LineOffset>\n", cols*size)
		b.WriteString("    <ByteOrder>LSB</ByteOrder>\n")
		b.WriteString("  </VRTRasterBand>\n")
	}
	b.WriteString("</VRTDataset>\n")
	return []byte(b.String()), true
}

// noData is the array's fill value as GDAL's NoDataValue, for real
// numeric arrays with a fill value.
func noData(a *nczarr.Array) (string, bool) {
	if a.Meta.DType.Kind == 'c' || a.Meta.DType.Kind == 'b' {
		return "", false
	}
	switch v := a.Meta.Fill.(type) {
	case string:
		switch v {
		case "NaN":
			return "nan", true
		case "Infinity":
			return "inf", true
		case "-Infinity":
			return "-inf", true
		}
	case fmt.Stringer: // json.Number
		if _, err := strconv.ParseFloat(v.String(), 64); err == nil {
			return v.String(), true
		}
	}
	return "", false
}

func xmlEscape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}
