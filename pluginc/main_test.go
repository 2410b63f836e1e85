package pluginc

import (
	"testing"

	"github.com/tfisolate/tfisolate/internal/childproc"
	"github.com/tfisolate/tfisolate/internal/testprovider"
)

func TestMain(m *testing.M) { childproc.Main(m, fleetChild, testprovider.Cleanup) }
