//go:build race

package main

// raceEnabled: the race detector multiplies a process's memory several
// times, so memory bounds measured without it do not hold under it.
const raceEnabled = true
