// Package storetest is what the tests of several packages use to check a
// store from outside: a whole store in memory to compare after a move
// (Collect, SameSnapshot), kept answers sealed against guesses, a walk
// through every page of a list, a store that counts its key/value reads.
// The suite every store.Store must pass is store's TestStores.
package storetest
