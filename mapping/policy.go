package mapping

import (
	"fmt"
	"strconv"
)

// Policy is the `--approve` policy: who answers an agent's permission
// requests. The zero value is PolicyAsk, the safe default.
type Policy int

// The approval policies.
const (
	PolicyAsk   Policy = iota // forward every permission request to AHP clients
	PolicyAll                 // approve everything
	PolicyReads               // approve read-only kinds, ask for the rest
	PolicyNone                // deny everything
)

var policyNames = [...]string{PolicyAsk: "ask", PolicyAll: "all", PolicyReads: "reads", PolicyNone: "none"}

// ParsePolicy reads a policy by name: ask, all, reads or none.
func ParsePolicy(s string) (Policy, error) {
	for p, name := range policyNames {
		if s == name {
			return Policy(p), nil
		}
	}
	return PolicyAsk, fmt.Errorf("unknown approval policy %q: want ask, all, reads or none", s)
}

// String is the policy's name, as ParsePolicy reads it.
func (p Policy) String() string {
	if p >= 0 && int(p) < len(policyNames) {
		return policyNames[p]
	}
	return "Policy(" + strconv.Itoa(int(p)) + ")"
}

// MarshalText writes the policy's name (for JSON configuration).
func (p Policy) MarshalText() ([]byte, error) {
	if p < 0 || int(p) >= len(policyNames) {
		return nil, fmt.Errorf("approval policy %d does not exist", int(p))
	}
	return []byte(p.String()), nil
}

// UnmarshalText reads a policy's name with ParsePolicy.
func (p *Policy) UnmarshalText(b []byte) error {
	v, err := ParsePolicy(string(b))
	if err != nil {
		return err
	}
	*p = v
	return nil
}

// readKinds are the ACP tool kinds the `reads` policy approves.
var readKinds = map[string]bool{"read": true, "search": true, "think": true, "fetch": true}

// AutoApprove applies an `--approve` policy to a tool call of the given ACP
// kind. decide is false when the user must be asked; otherwise approve says
// what the policy decided.
func AutoApprove(policy Policy, kind string) (decide bool, approve bool) {
	switch policy {
	case PolicyAll:
		return true, true
	case PolicyNone:
		return true, false
	case PolicyReads:
		if readKinds[kind] {
			return true, true
		}
	}
	return false, false
}
