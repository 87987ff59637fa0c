//go:build !windows

package writer

// underWine tells whether the test runs under Wine: never off Windows.
func underWine() bool { return false }
