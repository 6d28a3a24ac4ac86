// Package tools pins the code generators kafkascale uses; `make generate`
// runs them from here so the generated docs/ land at the repository root.
package tools

// Generate the provider documentation from templates/ and examples/.
//go:generate go tool tfplugindocs generate --provider-dir .. --provider-name kafkascale
