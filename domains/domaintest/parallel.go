package domaintest

import (
	"flag"
	"runtime"
	"strconv"
)

// WaitingParallel raises the default of -test.parallel to n, for a package
// whose parallel tests mostly wait (for a certificate to near its expiry, a
// child process, a timeout) rather than compute: the default, GOMAXPROCS,
// would run two of them at a time on a two-core machine while both cores
// idle. A -parallel given on the command line is kept. Call it from
// TestMain before m.Run.
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
