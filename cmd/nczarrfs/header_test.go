package main

import "testing"

// TestDatasetName checks the name of the "netcdf NAME {" line: the last
// element of the path without its extension, as ncdump names a dataset.
func TestDatasetName(t *testing.T) {
	for src, want := range map[string]string{
		"/data/run42.zip":                                  "run42",
		"/data/run42.file/":                                "run42",
		"run42":                                            "run42",
		"file:///data/run42.zip#mode=nczarr,zip":           "run42",
		"file:///data/run42.file#mode=zarr,file":           "run42",
		"s3://bucket/runs/run42":                           "run42",
		"https://host:9000/bucket/run42.zarr#mode=zarr,s3": "run42",
		"s3://bucket":                                      "bucket",
		"/":                                                "dataset",
		".hidden":                                          ".hidden",
	} {
		if got := datasetName(src); got != want {
			t.Errorf("datasetName(%q) = %q, want %q", src, got, want)
		}
	}
}
