package proxy

import (
	"reflect"
	"testing"
	"unsafe"
)

// fastImplements classifies every field of route and of routeRare: true for what the fast path
// implements, false for what sends a route to net/http when set (isFast checks those). A field
// added to either must be added here.
var fastImplements = map[string]bool{
	"name": true, "pathType": true, "path": true, "backends": true, "stats": true, "rare": true, "fast": true, "buffer": false,
	// routeRare's
	"re": true, "method": true, "headers": true, "query": true, "reqHdr": true, "respHdr": true, "rewrite": true,
	"cors": false, "redirect": false, "mirrors": false, "timeout": false, "beTimeout": false, "retry": false,
}

// TestIsFastClassifiesEveryField sets each field of an otherwise fast route in turn (route's own,
// then routeRare's in a route's rare part): isFast must stay true for the fields the fast path
// implements and turn false for every other, so that a field added to route without a fast-path
// implementation cannot put its routes on the fast path.
func TestIsFastClassifiesEveryField(t *testing.T) {
	types := []struct {
		typ reflect.Type
		// at is the value of the i-th field of a new route.
		at func(r *route, i int) reflect.Value
	}{
		{reflect.TypeFor[route](), func(r *route, i int) reflect.Value { return field(r, i) }},
		{reflect.TypeFor[routeRare](), func(r *route, i int) reflect.Value { return field(r.more(), i) }},
	}
	names := map[string]bool{}
	for _, tt := range types {
		for i := range tt.typ.NumField() {
			f := tt.typ.Field(i)
			names[f.Name] = true
			implemented, ok := fastImplements[f.Name]
			if !ok {
				t.Errorf("%s.%s is not classified: say in fastImplements whether the fast path implements it", tt.typ.Name(), f.Name)
				continue
			}
			var r route
			setNonZero(t, tt.at(&r, i))
			if got := r.isFast(); got != implemented {
				t.Errorf("route with only %s.%s set: isFast() = %v, want %v", tt.typ.Name(), f.Name, got, implemented)
			}
		}
	}
	for name := range fastImplements {
		if !names[name] {
			t.Errorf("fastImplements names %s, which neither route nor routeRare has", name)
		}
	}
}

// TestIsFastBackends: the fast path speaks HTTP/1.1 only; an invalid backend answers 500 without a
// connection, so it does not matter what it would speak.
func TestIsFastBackends(t *testing.T) {
	tests := []struct {
		name     string
		backends []*backend
		want     bool
	}{
		{"none", nil, true},
		{"http1", []*backend{{h1: true}}, true},
		{"h2c", []*backend{{}}, false},
		{"http1 and tls", []*backend{{h1: true}, {scheme: "https"}}, false},
		{"invalid", []*backend{{invalid: true}}, true},
	}
	for _, tt := range tests {
		r := route{backends: backendSet{list: tt.backends}}
		if got := r.isFast(); got != tt.want {
			t.Errorf("%s: isFast() = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// field returns the i-th field of the struct p points to, settable although unexported.
func field(p any, i int) reflect.Value {
	f := reflect.ValueOf(p).Elem().Field(i)
	return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
}

// setNonZero gives v a value other than its zero value; a backend set gets one HTTP/1.1 backend,
// which the fast path serves.
func setNonZero(t *testing.T, v reflect.Value) {
	t.Helper()
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Struct:
		if v.Type() != reflect.TypeFor[backendSet]() {
			t.Fatalf("no non-zero value for %s: teach setNonZero", v.Type())
		}
		v.Set(reflect.ValueOf(backendSet{list: []*backend{{h1: true}}, cum: []uint64{1}}))
	default:
		t.Fatalf("no non-zero value for %s: teach setNonZero", v.Type())
	}
}
