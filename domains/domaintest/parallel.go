package domaintest

import (
	"flag"
	"runtime"
	"strconv"
)

// WaitingParallel raises -test.parallel's default to n for a package whose
// parallel tests mostly wait rather than compute (GOMAXPROCS would leave
// cores idle). An explicit -parallel is kept. Call it from TestMain.
func WaitingParallel(n int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if given {
		return
	}
	if err := flag.Set("test.parallel", strconv.Itoa(max(n, runtime.GOMAXPROCS(0)))); err != nil {
		panic("domaintest: " + err.Error())
	}
}
