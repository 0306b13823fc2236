package proxy

import (
	"reflect"
	"testing"
	"unsafe"
)

// fastImplements classifies every field of route: true for what the fast path implements, false
// for what sends a route to net/http when set (isFast checks those). A field added to route must
// be added here.
var fastImplements = map[string]bool{
	"name": true, "pathType": true, "path": true, "re": true, "method": true, "headers": true, "query": true,
	"reqHdr": true, "respHdr": true, "rewrite": true, "backends": true, "stats": true, "fast": true,
	"cors": false, "redirect": false, "mirrors": false, "timeout": false, "beTimeout": false, "retry": false, "buffer": false,
}

// TestIsFastClassifiesEveryField sets each field of an otherwise fast route in turn: isFast must
// stay true for the fields the fast path implements and turn false for every other, so that a
// field added to route without a fast-path implementation cannot put its routes on the fast path.
func TestIsFastClassifiesEveryField(t *testing.T) {
	typ := reflect.TypeFor[route]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		implemented, ok := fastImplements[f.Name]
		if !ok {
			t.Errorf("route.%s is not classified: say in fastImplements whether the fast path implements it", f.Name)
			continue
		}
		var r route
		setNonZero(t, field(&r, i))
		if got := r.isFast(); got != implemented {
			t.Errorf("route with only %s set: isFast() = %v, want %v", f.Name, got, implemented)
		}
	}
	for name := range fastImplements {
		if _, ok := typ.FieldByName(name); !ok {
			t.Errorf("fastImplements names %s, which route does not have", name)
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

// field returns the i-th field of r settable although unexported.
func field(r *route, i int) reflect.Value {
	f := reflect.ValueOf(r).Elem().Field(i)
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
