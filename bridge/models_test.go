package bridge

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestPriceOf: the price in the CLI's model descriptions (as 2.1.328 words
// them), and descriptions without one.
func TestPriceOf(t *testing.T) {
	for _, tc := range []struct {
		desc string
		want modelCost
	}{
		{"Opus 5.5 · Most capable for complex work · $5/$25 per Mtok", modelCost{Input: 5, Output: 25}},
		{"Haiku 4.5 · Fastest for quick answers · $1/$5 per Mtok", modelCost{Input: 1, Output: 5}},
		{"Sonnet · $0.8/$4.25 per Mtok (1M context: $6/$22.5 per Mtok)", modelCost{Input: 0.8, Output: 4.25}},
		{"costs $ and more $3/ $4 per Mtok, then $2/$8 per Mtok", modelCost{Input: 2, Output: 8}},
		{"Use the default model", modelCost{}},
		{"$5/$25 per Mto", modelCost{}},
		{"$/$ per Mtok", modelCost{}},
		{"", modelCost{}},
	} {
		assert.Equal(t, tc.want, priceOf(tc.desc), tc.desc)
	}
}
