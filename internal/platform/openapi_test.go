package platform_test

import (
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/platform"
)

// The OpenAPI file is the published contract; these tests keep it equal to
// the wire types that the client and the local server share.

type openAPISchema struct {
	Type       string                   `yaml:"type"`
	Required   []string                 `yaml:"required"`
	Properties map[string]openAPISchema `yaml:"properties"`
	Enum       []string                 `yaml:"enum"`
	Ref        string                   `yaml:"$ref"`
	Items      *openAPISchema           `yaml:"items"`
	AllOf      []openAPISchema          `yaml:"allOf"`
	Nullable   bool                     `yaml:"nullable"`
}

type openAPIResponse struct {
	Ref     string                    `yaml:"$ref"`
	Headers map[string]map[string]any `yaml:"headers"`
	Content map[string]struct {
		Schema openAPISchema `yaml:"schema"`
	} `yaml:"content"`
}

type openAPIDoc struct {
	OpenAPI  string                          `yaml:"openapi"`
	Security []map[string][]string           `yaml:"security"`
	Paths    map[string]map[string]yaml.Node `yaml:"paths"`
	Comps    struct {
		SecuritySchemes map[string]struct {
			Type   string `yaml:"type"`
			Scheme string `yaml:"scheme"`
		} `yaml:"securitySchemes"`
		Schemas   map[string]openAPISchema   `yaml:"schemas"`
		Responses map[string]openAPIResponse `yaml:"responses"`
	} `yaml:"components"`
}

type openAPIOperation struct {
	Responses   map[string]openAPIResponse `yaml:"responses"`
	RequestBody struct {
		Content map[string]struct {
			Schema openAPISchema `yaml:"schema"`
		} `yaml:"content"`
	} `yaml:"requestBody"`
}

func loadOpenAPI(t *testing.T) (openAPIDoc, []byte) {
	t.Helper()
	raw, err := os.ReadFile("../../docs/scaling-api.openapi.yaml")
	if err != nil {
		t.Fatalf("reading the contract: %v", err)
	}
	var doc openAPIDoc
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("the contract is not valid YAML: %v", err)
	}
	return doc, raw
}

func operation(t *testing.T, doc openAPIDoc, path, method string) openAPIOperation {
	t.Helper()
	item, ok := doc.Paths[path]
	if !ok {
		t.Fatalf("path %s is missing; have %v", path, keys(doc.Paths))
	}
	node, ok := item[method]
	if !ok {
		t.Fatalf("%s %s is missing", method, path)
	}
	var op openAPIOperation
	if err := node.Decode(&op); err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return op
}

func keys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// jsonFields returns a struct's JSON names, and those without omitempty.
func jsonFields(t reflect.Type) (all, always []string) {
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		all = append(all, name)
		if !strings.Contains(opts, "omitempty") {
			always = append(always, name)
		}
	}
	sort.Strings(all)
	sort.Strings(always)
	return all, always
}

func TestOpenAPISchemasMatchWireTypes(t *testing.T) {
	doc, _ := loadOpenAPI(t)
	if !strings.HasPrefix(doc.OpenAPI, "3.0.") {
		t.Errorf("openapi = %q, want 3.0.x", doc.OpenAPI)
	}
	types := map[string]reflect.Type{
		"Cluster":                reflect.TypeFor[platform.Cluster](),
		"Broker":                 reflect.TypeFor[platform.Broker](),
		"Operation":              reflect.TypeFor[platform.Operation](),
		"SetBrokerCountRequest":  reflect.TypeFor[platform.SetBrokerCountRequest](),
		"SetBrokerCountResponse": reflect.TypeFor[platform.SetBrokerCountResponse](),
		"ErrorBody":              reflect.TypeFor[platform.ErrorBody](),
	}
	if got, want := keys(doc.Comps.Schemas), keys(types); !slices.Equal(got, want) {
		t.Errorf("schemas = %v, want %v", got, want)
	}
	for name, typ := range types {
		s, ok := doc.Comps.Schemas[name]
		if !ok {
			continue
		}
		all, always := jsonFields(typ)
		if got := keys(s.Properties); !slices.Equal(got, all) {
			t.Errorf("%s properties = %v, want the JSON fields of %s: %v", name, got, typ, all)
		}
		req := slices.Sorted(slices.Values(s.Required))
		if !slices.Equal(req, always) {
			t.Errorf("%s required = %v, want the fields always sent: %v", name, req, always)
		}
	}

	enums := map[string][]string{
		"Operation.state": {string(platform.OperationPending), string(platform.OperationRunning), string(platform.OperationSucceeded), string(platform.OperationFailed)},
		"Broker.state":    {string(platform.BrokerStarting), string(platform.BrokerRunning), string(platform.BrokerStopping), string(platform.BrokerStopped)},
	}
	for at, want := range enums {
		schema, field, _ := strings.Cut(at, ".")
		got := doc.Comps.Schemas[schema].Properties[field].Enum
		if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
			t.Errorf("%s enum = %v, want %v", at, got, want)
		}
	}

	if op := doc.Comps.Schemas["Cluster"].Properties["operation"]; !op.Nullable || len(op.AllOf) != 1 || op.AllOf[0].Ref != "#/components/schemas/Operation" {
		t.Errorf("Cluster.operation must be a nullable Operation, got %+v", op)
	}
}

func TestOpenAPIPathsAuthAndRetryAfter(t *testing.T) {
	doc, raw := loadOpenAPI(t)

	if got := keys(doc.Paths); !slices.Equal(got, []string{"/v1/clusters/{id}", "/v1/clusters/{id}/broker-count", "/v1/operations/{op}"}) {
		t.Errorf("paths = %v", got)
	}
	if s := doc.Comps.SecuritySchemes["bearerAuth"]; s.Type != "http" || s.Scheme != "bearer" {
		t.Errorf("bearerAuth = %+v, want http bearer", s)
	}
	if len(doc.Security) != 1 || doc.Security[0]["bearerAuth"] == nil {
		t.Errorf("security = %v, want bearerAuth on every operation", doc.Security)
	}

	put := operation(t, doc, "/v1/clusters/{id}/broker-count", "put")
	if got := keys(put.Responses); !slices.Equal(got, []string{"202", "400", "401", "404", "409", "429", "503"}) {
		t.Errorf("PUT broker-count responses = %v", got)
	}
	if ref := put.RequestBody.Content["application/json"].Schema.Ref; ref != "#/components/schemas/SetBrokerCountRequest" {
		t.Errorf("PUT body schema = %q", ref)
	}
	if ref := put.Responses["202"].Content["application/json"].Schema.Ref; ref != "#/components/schemas/SetBrokerCountResponse" {
		t.Errorf("PUT 202 schema = %q", ref)
	}
	for _, g := range []struct{ path, schema string }{
		{"/v1/clusters/{id}", "Cluster"},
		{"/v1/operations/{op}", "Operation"},
	} {
		get := operation(t, doc, g.path, "get")
		if ref := get.Responses["200"].Content["application/json"].Schema.Ref; ref != "#/components/schemas/"+g.schema {
			t.Errorf("GET %s 200 schema = %q", g.path, ref)
		}
		for _, code := range []string{"401", "404", "429", "503"} {
			if _, ok := get.Responses[code]; !ok {
				t.Errorf("GET %s lacks %s", g.path, code)
			}
		}
	}
	for _, name := range []string{"TooManyRequests", "ServiceUnavailable"} {
		if _, ok := doc.Comps.Responses[name].Headers["Retry-After"]; !ok {
			t.Errorf("response %s lacks the Retry-After header", name)
		}
	}

	// Every reference points at something that exists.
	var node yaml.Node
	if err := yaml.Unmarshal(raw, &node); err != nil {
		t.Fatal(err)
	}
	var refs []string
	collectRefs(&node, &refs)
	if len(refs) < 10 {
		t.Fatalf("found only %d $ref; the walk is broken", len(refs))
	}
	for _, ref := range refs {
		if !resolves(&node, ref) {
			t.Errorf("$ref %s points at nothing", ref)
		}
	}
}

func collectRefs(n *yaml.Node, refs *[]string) {
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == "$ref" {
				*refs = append(*refs, n.Content[i+1].Value)
			}
		}
	}
	for _, c := range n.Content {
		collectRefs(c, refs)
	}
}

func resolves(root *yaml.Node, ref string) bool {
	n := root
	if n.Kind == yaml.DocumentNode {
		n = n.Content[0]
	}
	for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		found := false
		for i := 0; n.Kind == yaml.MappingNode && i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == part {
				n, found = n.Content[i+1], true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
