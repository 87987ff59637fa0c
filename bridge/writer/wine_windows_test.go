//go:build windows

package writer

import "golang.org/x/sys/windows"

// underWine tells whether the test runs under Wine (scripts/test-windows),
// whose ntdll alone exports wine_get_version.
func underWine() bool {
	return windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil
}
