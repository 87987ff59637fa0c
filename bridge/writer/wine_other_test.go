//go:build !windows

package bridge

// underWine tells whether the test runs under Wine: never off Windows.
func underWine() bool { return false }
