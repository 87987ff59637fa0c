package claudecli

// InstalledVersion exports installedVersion to the external tests
// (package claudecli_test), which may import claudetest.
var InstalledVersion = installedVersion

// RunVersion exports runVersion to the external tests.
var RunVersion = runVersion
