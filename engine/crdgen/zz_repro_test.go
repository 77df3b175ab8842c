package crdgen

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

func TestZZRepro(t *testing.T) {
	b, _ := os.ReadFile("testdata/fuzz/FuzzSchema/d495b357cad35924")
	lines := strings.Split(string(b), "\n")
	s := strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")")
	q, err := strconv.Unquote(s)
	if err != nil { t.Fatal(err) }
	t.Logf("%s", newGen([]byte(q)).source())
}
