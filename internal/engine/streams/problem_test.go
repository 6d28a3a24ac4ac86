package streams

import (
	"errors"
	"reflect"
	"testing"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

// problemLike reports whether got has want's kind, field and app, and every
// other field want sets: a test names only the data that matters to it.
func problemLike(got, want *Problem) bool {
	if got.Kind != want.Kind || got.Field != want.Field || got.App != want.App {
		return false
	}
	g, w := reflect.ValueOf(*got), reflect.ValueOf(*want)
	for i := range w.NumField() {
		if name := w.Type().Field(i).Name; name == "Err" || w.Field(i).IsZero() {
			continue
		}
		if !reflect.DeepEqual(g.Field(i).Interface(), w.Field(i).Interface()) {
			return false
		}
	}
	return true
}

// requireProblem fails unless err is an *engine.InputError holding a problem like
// want.
func requireProblem(t *testing.T, err error, want Problem) *Problem {
	t.Helper()
	var ie *engine.InputError
	if !errors.As(err, &ie) {
		t.Fatalf("err = %v, want an *engine.InputError", err)
	}
	for _, p := range ie.Problems {
		var sp *Problem
		if errors.As(p, &sp) && problemLike(sp, &want) {
			return sp
		}
	}
	t.Fatalf("no problem like %+v among:\n%#v", want, ie.Problems)
	return nil
}

func TestStreamsProblemErrorNamesTheAppKindAndTopic(t *testing.T) {
	p := &Problem{Kind: ProblemShrink, Subject: "shop", Topic: "orders", Err: engine.CheckNoShrink("orders", 8, 4)}
	want := `Streams app "shop": partition count below a topic's (topic "orders"): topic "orders" has 8 partitions and 4 are asked for: Kafka can add partitions to a topic but never remove them`
	if p.Error() != want {
		t.Errorf("got  %s\nwant %s", p.Error(), want)
	}
	var se *engine.ShrinkError
	if !errors.As(p, &se) || se.Target != 4 {
		t.Errorf("the shrink error does not unwrap: %v", se)
	}
}

// The undeclared readers are named in Error too: internal/kafka's
// integration test, which plans without a provider, matches them.
func TestProblemErrorNamesTheReaders(t *testing.T) {
	p := &Problem{Kind: ProblemUndeclaredReaders, Subject: "shop", Readers: []Reader{
		{App: "shop", Protocol: ProtocolStreams, Members: 2, Declared: true, Reads: []string{"customers", "orders"}},
		{App: "fraud", Reads: []string{"orders"}},
		{App: "audit", Protocol: ProtocolStreams, Members: 1, Reads: []string{"orders"}},
	}}
	want := `Streams app "shop": undeclared apps read growing sources: shop (declared) reads customers, orders; ` +
		`fraud (classic protocol, stopped, not declared) reads orders; audit (streams protocol, 1 member(s), not declared) reads orders`
	if p.Error() != want {
		t.Errorf("got  %s\nwant %s", p.Error(), want)
	}
}
