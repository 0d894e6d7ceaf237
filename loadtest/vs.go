// Another revision measured beside this one, each of its rows right after
// this revision's row of the same request (-vs, -postgres-vs).

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// otherRevision is the binary built from another revision's source folder.
type otherRevision struct {
	bin, rev string
}

// buildOther builds the revision in dir, once however many flags name it.
func (b *bench) buildOther(ctx context.Context, dir string) (otherRevision, error) {
	if o, ok := b.others[dir]; ok {
		return o, nil
	}
	o := otherRevision{rev: revision(ctx, dir)}
	if sameFolder(dir, b.src) {
		// This revision's own folder: a second build would be the same.
		b.progress("the revision in %s (%s) is this one's build", dir, o.rev)
		o.bin = b.bin
	} else {
		b.progress("building the revision in %s (%s)", dir, o.rev)
		var err error
		if o.bin, err = buildIn(ctx, dir, filepath.Join(b.dir, fmt.Sprintf("petstore-vs%d", len(b.others)))); err != nil {
			return otherRevision{}, err
		}
	}
	if b.others == nil {
		b.others = map[string]otherRevision{}
	}
	b.others[dir] = o
	return o, nil
}

func sameFolder(a, b string) bool {
	ia, errA := os.Stat(a)
	ib, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(ia, ib)
}

// beside puts each job of other right after jobs' job at the same place;
// jobs' extra ones follow.
func beside(jobs, other []job) []job {
	out := make([]job, 0, len(jobs)+len(other))
	for i, j := range jobs {
		out = append(out, j)
		if i < len(other) {
			out = append(out, other[i])
		}
	}
	return out
}

// smallStoreVs starts -vs's revision on its own small store, seeded by
// this revision's store (older binaries read the file), and returns the
// jobs of every small-store row sent to it: what else a process serves
// changes what a row costs.
func (b *bench) smallStoreVs(ctx context.Context) ([]job, error) {
	o, err := b.buildOther(ctx, b.cfg.vs)
	if err != nil {
		return nil, fmt.Errorf("-vs: %w", err)
	}
	b.vsRev = o.rev
	data := filepath.Join(b.dir, "small-vs.db")
	catID, _, err := b.importStore(ctx, data, b.cfg.pets)
	if err != nil {
		return nil, fmt.Errorf("-vs: %w", err)
	}
	p, _, err := b.startRevision(ctx, fmt.Sprintf("petstore %s (%s pets)", o.rev, humanCount(b.cfg.pets)), o.bin, nil, "--data", data, "--admin-token", b.adminToken)
	if err != nil {
		return nil, fmt.Errorf("-vs %s: %w", o.rev, err)
	}
	return b.smallJobs(ctx, p, catID, ", "+o.rev)
}

// smallRow adds the small store's row label, judged by checks and, with
// -vs, against the other revision's row that follows it: reads by CPU,
// writes by req/s and CPU, POST /pets held to targetPostVsRevision.
func (b *bench) smallRow(r *report, label string, checks ...check) {
	if b.vsRev == "" {
		r.load(label, b.loads[label], checks...)
		return
	}
	other := label + ", " + b.vsRev
	res, vs := b.loads[label], b.loads[other]
	switch {
	case strings.HasPrefix(label, "GET "):
		checks = append(checks, cpuVs(res, vs, b.vsRev, "", 0))
	case label == labelPostPets:
		checks = append(checks, rpsVs(res, vs, b.vsRev, ">=", targetPostVsRevision), cpuVs(res, vs, b.vsRev, "", 0))
	default:
		checks = append(checks, rpsVs(res, vs, b.vsRev, "", 0), cpuVs(res, vs, b.vsRev, "", 0))
	}
	r.load(label, res, checks...)
	r.load(other, vs, check{on: "the revision of -vs", ok: vs != nil})
}

func knowsFlag(ctx context.Context, bin, flag string) bool {
	out, _ := exec.CommandContext(ctx, bin, "-h").CombinedOutput()
	return bytes.Contains(out, []byte("-"+flag+" "))
}
