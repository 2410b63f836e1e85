package modserve

import (
	"bytes"
	"io"

	"github.com/tfisolate/tfisolate/internal/treesum"
)

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

func recordFor(dir string) (treesum.Tree, error) { return treesum.Record(dir) }
