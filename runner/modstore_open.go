package runner

import (
	"errors"
	"fmt"

	"github.com/tfisolate/tfisolate/internal/modstore"
)

// openModuleStore opens the module store moduleStoreDir names, if any. A
// store, like the plugin cache, must be a dir only the effective user (or
// root) owns and writes (invariant 12): a WithModuleStore dir that fails
// is refused by name; the default beside the plugin cache is never used
// when it fails (a cache shared with a group, pluginc.WithSharedGroup, is
// writable by the group, and the module store cannot be shared): the Run
// goes without a store (modules are fetched once per Run) and says so in
// a Warn record, nothing is created there.
func (c *config) openModuleStore() (*modstore.Store, error) {
	dir := c.moduleStoreDir()
	if dir == "" {
		return nil, nil
	}
	s, err := modstore.Open(dir, modstore.WithLogger(c.logger))
	switch {
	case err == nil:
		return s, nil
	case c.moduleStore == "" && errors.Is(err, modstore.ErrUnsafePath):
		c.logger.Warn("the default module store beside the plugin cache is not private; modules are fetched once per Run "+
			"(give the runner a private dir with WithModuleStore)", "dir", dir, "error", err)
		return nil, nil
	case errors.Is(err, modstore.ErrUnsafePath):
		return nil, fmt.Errorf("WithModuleStore(%q): %w (WithModuleStore(\"-\") turns the store off)", c.moduleStore, err)
	}
	return nil, err
}
