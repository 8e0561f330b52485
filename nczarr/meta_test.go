package nczarr

import (
	"strings"
	"testing"
)

func TestGroupInfoGenerations(t *testing.T) {
	docs := []string{
		`{"dims": {"x": 3, "t": 2}, "vars": ["v", "c"], "groups": ["g"]}`,
		`{"dimensions": {"x": 3, "t": {"size": 2, "unlimited": 1}}, "arrays": ["v", "c"], "groups": ["g"]}`,
	}
	for _, doc := range docs {
		o, err := parseObject([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		g, ok := parseGroupInfo(o)
		if !ok || strings.Join(g.Arrays, ",") != "v,c" || strings.Join(g.Groups, ",") != "g" || g.Dims["x"].Size != 3 || g.Dims["t"].Size != 2 {
			t.Errorf("%s: got %+v %v", doc, g, ok)
		}
	}
}
