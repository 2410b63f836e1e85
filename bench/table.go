package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// writeTable prints rows as a markdown table, the first row as the header,
// padded so it also reads as plain text; right lists the columns to align
// right (numbers).
func writeTable(w io.Writer, rows [][]string, right ...int) {
	if len(rows) == 0 {
		return
	}
	width := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			// Three is the narrowest separator markdown accepts (---, --:).
			width[i] = max(width[i], len(c), 3)
		}
	}
	line := func(cells []string) {
		var b strings.Builder
		b.WriteString("|")
		for i, c := range cells {
			pad := strings.Repeat(" ", width[i]-len(c))
			if slices.Contains(right, i) {
				fmt.Fprintf(&b, " %s%s |", pad, c)
			} else {
				fmt.Fprintf(&b, " %s%s |", c, pad)
			}
		}
		fmt.Fprintln(w, b.String())
	}
	line(rows[0])
	sep := make([]string, len(width))
	for i, n := range width {
		if slices.Contains(right, i) {
			sep[i] = strings.Repeat("-", n-1) + ":"
		} else {
			sep[i] = strings.Repeat("-", n)
		}
	}
	line(sep)
	for _, r := range rows[1:] {
		line(r)
	}
}

// secs formats d in seconds with two significant decimals for short ones.
func secs(d time.Duration) string {
	s := d.Seconds()
	if s < 10 {
		return fmt.Sprintf("%.2f s", s)
	}
	return fmt.Sprintf("%.1f s", s)
}

// millis formats d in milliseconds.
func millis(d time.Duration) string {
	return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
}

// ratio is a/b as "1.23x", or "n/a" when there is no b.
func ratio(a, b time.Duration) string {
	if b <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2fx", float64(a)/float64(b))
}

// mib formats a byte count in MiB.
func mib(n int64) string {
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

func joinErrs(errs []error) error { return errors.Join(errs...) }
