package testregistry

// Start is New for tests: it fails the test on error and closes the server
// when the test ends.
func Start(tb TB, opts ...Option) *Server {
	tb.Helper()
	s, err := New(opts...)
	if err != nil {
		tb.Fatalf("%v", err)
	}
	tb.Cleanup(s.Close)
	return s
}

// MustAdd is Add for tests.
func (s *Server) MustAdd(tb TB, p Package) {
	tb.Helper()
	if err := s.Add(p); err != nil {
		tb.Fatalf("%v", err)
	}
}
