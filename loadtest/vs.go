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
	b.others[dir] = o
	return o, nil
}

func sameFolder(a, b string) bool {
	ia, errA := os.Stat(a)
	ib, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(ia, ib)
}

// addBeside adds jobs to the run, each followed by its counterpart on the
// revision in dir, which flag names (none when dir is empty): jobsOf
// starts that revision's server and returns its jobs in the same order;
// rev is set to its name.
func (b *bench) addBeside(ctx context.Context, jobs []job, flag, dir string, rev *string, jobsOf func(o otherRevision) ([]job, error)) error {
	var other []job
	if dir != "" {
		o, err := b.buildOther(ctx, dir)
		if err != nil {
			return fmt.Errorf("%s: %w", flag, err)
		}
		*rev = o.rev
		if other, err = jobsOf(o); err != nil {
			return fmt.Errorf("%s %s: %w", flag, o.rev, err)
		}
	}
	for i, j := range jobs {
		b.jobs = append(b.jobs, j)
		if i < len(other) {
			b.jobs = append(b.jobs, other[i])
		}
	}
	return nil
}

// smallRow adds the small store's row label, judged by checks and, with
// -vs, against the other revision's row that follows it.
func (b *bench) smallRow(r *report, label string, checks ...check) {
	res := b.loads[label]
	if b.vsRev == "" {
		r.load(label, res, checks...)
		return
	}
	other := label + ", " + b.vsRev
	r.load(label, res, append(checks, vsRevision(label, res, b.loads[other], b.vsRev)...)...)
	r.load(other, b.loads[other], check{on: "the revision of -vs", ok: b.loads[other] != nil})
}

// byKind compares res with base as its kind of row is judged: reads by
// CPU per request, writes by req/s.
func byKind(label string, res, base *loadResult, baseName, op string, target float64) check {
	if strings.HasPrefix(label, "GET ") {
		return cpuVs(res, base, baseName, op, target)
	}
	return rpsVs(res, base, baseName, op, target)
}

// vsRevision compares res with another revision's row vs: reads by CPU,
// writes by req/s and CPU, POST /pets held to targetPostVsRevision.
func vsRevision(label string, res, vs *loadResult, rev string) []check {
	checks := []check{byKind(label, res, vs, rev, "", 0)}
	if label == labelPostPets {
		checks[0].op, checks[0].target = ">=", targetPostVsRevision
	}
	if !strings.HasPrefix(label, "GET ") {
		checks = append(checks, cpuVs(res, vs, rev, "", 0))
	}
	return checks
}

func knowsFlag(ctx context.Context, bin, flag string) bool {
	out, _ := exec.CommandContext(ctx, bin, "-h").CombinedOutput()
	return bytes.Contains(out, []byte("-"+flag+" "))
}
