package translate

import (
	"regexp/syntax"
	"strings"
	"testing"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// A regex translation keeps for a class must never make the proxy NACK the gateway's config:
// translation measures each regex once, and its verdict for any class limit refuses at least what
// ir.Validate, measuring with that limit, refuses.
func TestRegexVerdictCoversValidate(t *testing.T) {
	exprs := []string{
		"abc", "[ab][cd][ef]", "((((a))))", "/(alpha|beta)/[a-z0-9]{120}", "[a-z]{800}[0-9]{800}",
		"/" + strings.Repeat("(abc|def)", 130), strings.Repeat("[a-z0-9]{1,999}", 20), "(a{1,100}){1,10}", "x*y+z?",
	}
	for _, expr := range exprs {
		rs, err := measureRegex(expr)
		if err != nil {
			t.Fatal(err)
		}
		for _, limit := range []int{1, 5, 20, 100, 500, 1000, 2000, 5000, 20_000, 100_000} {
			n, est, err := ir.RegexInstructions(expr, limit, limit)
			if err != nil {
				t.Fatal(err)
			}
			if ir.RegexTooLarge(n, est, limit) && !rs.tooLarge(limit) {
				t.Errorf("%.30q with limit %d: Validate refuses (%d, est %d) what translation keeps (%+v)", expr, limit, n, est, rs)
			}
		}
	}
}

// The estimate is an upper bound of the exact program size.
func TestRegexEstimateIsUpperBound(t *testing.T) {
	for _, expr := range []string{"a", "", "^$", "(?i)k", "[ab][cd][ef]", "((((a))))", "a|b|cd|", "x*y+z?", "(ab){3,}", "(ab){0,7}",
		"[a-z]{800}[0-9]{800}", "(a{1,100}){1,10}", "/(alpha|beta)/[a-z0-9]{120}", `\bfoo\B.*?bar+?`} {
		re, err := syntax.Parse(expr, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		prog, err := syntax.Compile(re.Simplify())
		if err != nil {
			t.Fatal(err)
		}
		_, est, err := ir.RegexInstructions(expr, 1<<30, 1<<30)
		if err != nil || est < len(prog.Inst) {
			t.Errorf("%q: estimate %d below the exact %d (%v)", expr, est, len(prog.Inst), err)
		}
	}
}
