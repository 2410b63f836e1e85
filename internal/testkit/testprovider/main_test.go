package testprovider_test

import (
	"os"
	"testing"

	"github.com/tfisolate/tfisolate/internal/testkit/testprovider"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testprovider.Cleanup()
	os.Exit(code)
}
