package fingerprint

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestChangedFiles: added, modified and removed files by path, each kind
// sorted, never a digest; none changed is ""; past FilesShown paths the
// rest are counted.
func TestChangedFiles(t *testing.T) {
	saved := map[string]string{"main.tf": "d1", "old.tf": "d2", "vars.tf": "d3", "../modules/net/main.tf": "d4"}
	now := map[string]string{"main.tf": "d1x", "vars.tf": "d3", "extra.tf": "d5", "a.tf": "d6", "../modules/net/main.tf": "d4"}
	require.Equal(t, `added "a.tf", "extra.tf"; modified "main.tf"; removed "old.tf"`, ChangedFiles(saved, now))
	require.Equal(t, "", ChangedFiles(saved, saved))
	require.Equal(t, `added "x\ny.tf"`, ChangedFiles(nil, map[string]string{"x\ny.tf": "d"}), "a path is quoted: it cannot forge a line")

	many := map[string]string{}
	for i := range 25 {
		many[fmt.Sprintf("f%02d.tf", i)] = "d"
	}
	got := ChangedFiles(map[string]string{"gone.tf": "d", "f00.tf": "old"}, many)
	require.Equal(t, `added "f01.tf", "f02.tf", "f03.tf", "f04.tf", "f05.tf", "f06.tf", "f07.tf", "f08.tf", "f09.tf", "f10.tf" and 16 more`, got)
	require.NotContains(t, ChangedFiles(saved, now), "d1")
}
