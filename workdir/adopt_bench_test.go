package workdir

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkAdoptionScan measures what every adoption adds to find the
// owners the instances' own records show (claimsNow), on a root of 1000
// homes: 990 whose record holds only the last state seen, 10 that
// adopted a state (one the register does not list).
func BenchmarkAdoptionScan(b *testing.B) {
	m, err := New(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	var reg adoptedRegister
	for i := range 1000 {
		id, err := ID("plat-ue2-dev", fmt.Sprintf("elasticache/redis-cluster-%d", i))
		if err != nil {
			b.Fatal(err)
		}
		home := filepath.Join(m.Root(), id)
		if err := os.MkdirAll(filepath.Join(home, srcDir), 0o755); err != nil {
			b.Fatal(err)
		}
		rec := stateRecord{Seen: map[string]seenState{"terraform.tfstate": {Lineage: fmt.Sprintf("l-%d", i), Serial: 3}}}
		if i%100 == 0 {
			src := fmt.Sprintf("/legacy/c%d/terraform.tfstate", i)
			rec.Adopted = []adoptedState{{Source: src, Path: "terraform.tfstate", Lineage: fmt.Sprintf("l-%d", i), Serial: 1, Time: time.Now()}}
			if i > 0 {
				reg.Claims = append(reg.Claims, claim{Stack: "plat-ue2-dev", Instance: "x", ID: id, Source: src, Lineage: fmt.Sprintf("l-%d", i)})
			}
		}
		if err := writeStateRecord(home, rec); err != nil {
			b.Fatal(err)
		}
	}
	if err := m.writeAdopted(reg); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		claims, stale, err := m.claimsNow()
		if err != nil || len(claims) != 10 || !stale {
			b.Fatal(len(claims), stale, err)
		}
	}
}
