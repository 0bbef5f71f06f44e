package cache

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// result is what one concurrent Save reports back to the test goroutine.
type result struct {
	code    string
	e       Entry
	created bool
	err     error
}

func saveAll(caches []*Cache, codes []string) []result {
	results := make([]result, len(codes))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, code := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			e, created, err := caches[i%len(caches)].Save(code, t0)
			results[i] = result{code, e, created, err}
		}()
	}
	close(start)
	wg.Wait()
	return results
}

func TestConcurrentSaveDistinct(t *testing.T) {
	c := openTemp(t)
	var codes []string
	for i := range 20 {
		// Large enough that a torn write would show.
		codes = append(codes, fmt.Sprintf("// script %d\n%s", i, strings.Repeat(fmt.Sprintf("f%d();\n", i), 20000)))
	}
	for _, r := range saveAll([]*Cache{c}, codes) {
		if r.err != nil || !r.created {
			t.Fatalf("Save: created %v, %v", r.created, r.err)
		}
		e, code, err := c.Find(r.e.Name)
		if err != nil || code != r.code || e != r.e {
			t.Errorf("Find(%s) = %d bytes, %v; want the %d bytes saved", r.e.Name, len(code), err, len(r.code))
		}
	}
	if got := dirNames(t, c.Dir()); len(got) != 20 {
		t.Errorf("dir holds %d files, want 20: %q", len(got), got)
	}
}

func TestConcurrentSaveSame(t *testing.T) {
	tests := []struct {
		name      string
		instances int // separate Cache values on one directory act like separate processes
	}{
		{"one cache", 1},
		{"four caches on one directory", 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			first := openTemp(t)
			caches := []*Cache{first}
			for range tt.instances - 1 {
				c, err := Open(first.Dir())
				if err != nil {
					t.Fatal(err)
				}
				caches = append(caches, c)
			}
			codes := make([]string, 20)
			for i := range codes {
				codes[i] = "// same\nsame()"
			}
			results := saveAll(caches, codes)
			created := 0
			for _, r := range results {
				if r.err != nil {
					t.Fatalf("Save: %v", r.err)
				}
				if r.created {
					created++
				}
				if r.e != results[0].e {
					t.Errorf("entry %+v differs from %+v", r.e, results[0].e)
				}
			}
			if created != 1 {
				t.Errorf("%d Saves reported created, want 1", created)
			}
			if got := dirNames(t, first.Dir()); len(got) != 1 {
				t.Errorf("dir holds %q, want 1 file", got)
			}
		})
	}
}
