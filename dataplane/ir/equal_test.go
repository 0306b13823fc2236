package ir

import (
	"reflect"
	"strings"
	"testing"
)

// fill sets every field reachable from v to a non-zero value: slices get one element, pointers a
// value. A type within itself (a mirror's backend has filters, which have mirrors) is left zero.
func fill(v reflect.Value, path map[reflect.Type]bool) {
	switch v.Kind() {
	case reflect.Struct:
		if path[v.Type()] {
			return
		}
		path[v.Type()] = true
		defer delete(path, v.Type())
		for i := range v.NumField() {
			fill(v.Field(i), path)
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), path)
	case reflect.Slice:
		if e := v.Type().Elem(); e.Kind() == reflect.Struct && path[e] {
			return
		}
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0), path)
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint8, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	default:
		panic("fill: unhandled kind " + v.Kind().String())
	}
}

// leaves calls f with the path of every scalar field under v and a function changing it.
func leaves(v reflect.Value, path string, f func(path string, change func())) {
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			leaves(v.Field(i), path+"."+v.Type().Field(i).Name, f)
		}
	case reflect.Pointer:
		if v.IsNil() {
			return
		}
		f(path+"=nil", func() { v.Set(reflect.Zero(v.Type())) })
		if !v.IsNil() { // unless f just changed it
			leaves(v.Elem(), path, f)
		}
	case reflect.Slice:
		if v.Len() == 0 {
			return
		}
		f(path+"=empty", func() { v.Set(reflect.MakeSlice(v.Type(), 0, 0)) })
		if v.Len() > 0 {
			leaves(v.Index(0), path+"[0]", f)
		}
	case reflect.String:
		f(path, func() { v.SetString(v.String() + "y") })
	case reflect.Bool:
		f(path, func() { v.SetBool(!v.Bool()) })
	case reflect.Int, reflect.Int32, reflect.Int64:
		f(path, func() { v.SetInt(v.Int() + 1) })
	case reflect.Uint8, reflect.Uint32, reflect.Uint64:
		f(path, func() { v.SetUint(v.Uint() + 1) })
	}
}

// TestEqualCoversEveryField changes every field of a fully set VirtualHost in turn: Equal must
// notice each, or the config server would keep serving a stale host.
func TestEqualCoversEveryField(t *testing.T) {
	mk := func() *VirtualHost {
		var vh VirtualHost
		fill(reflect.ValueOf(&vh).Elem(), map[reflect.Type]bool{})
		return &vh
	}
	a := mk()
	if b := mk(); !a.Equal(b) {
		t.Fatal("equal hosts built apart are not Equal")
	}
	if !a.Equal(a) {
		t.Fatal("a host is not Equal to itself")
	}
	n := 0
	leaves(reflect.ValueOf(mk()).Elem(), "VirtualHost", func(path string, _ func()) {
		n++
		b := mk()
		i := 0
		leaves(reflect.ValueOf(b).Elem(), "VirtualHost", func(p string, change func()) {
			if i++; i == n {
				if p != path {
					t.Fatalf("walk order changed: %s != %s", p, path)
				}
				change()
			}
		})
		if a.Equal(b) || b.Equal(a) {
			t.Errorf("Equal misses a change of %s", strings.TrimPrefix(path, "VirtualHost."))
		}
	})
	if n < 50 {
		t.Errorf("only %d fields walked", n)
	}
}

// TestBaseEqualCoversEveryField changes every field of a fully set Config but its virtual hosts
// and version in turn: BaseEqual must notice each, or the config server would keep serving a stale
// base (listeners, certificates, limits).
func TestBaseEqualCoversEveryField(t *testing.T) {
	mk := func() *Config {
		var c Config
		fill(reflect.ValueOf(&c).Elem(), map[reflect.Type]bool{})
		return &c
	}
	a := mk()
	if b := mk(); !a.BaseEqual(b) {
		t.Fatal("equal configs built apart are not BaseEqual")
	}
	n := 0
	leaves(reflect.ValueOf(mk()).Elem(), "Config", func(path string, _ func()) {
		n++
		b := mk()
		i := 0
		leaves(reflect.ValueOf(b).Elem(), "Config", func(p string, change func()) {
			if i++; i == n {
				if p != path {
					t.Fatalf("walk order changed: %s != %s", p, path)
				}
				change()
			}
		})
		ignored := path == "Config.Version" || strings.Contains(path, ".VirtualHosts")
		if got := a.BaseEqual(b) && b.BaseEqual(a); got != ignored {
			t.Errorf("BaseEqual after a change of %s: %v, want %v", strings.TrimPrefix(path, "Config."), got, ignored)
		}
	})
	if n < 80 {
		t.Errorf("only %d fields walked", n)
	}
	// nil denied networks (the proxy's own list) are not an empty list (none denied).
	b := mk()
	b.Limits.DeniedEndpointCIDRs = nil
	c := mk()
	c.Limits.DeniedEndpointCIDRs = []string{}
	if b.BaseEqual(c) {
		t.Error("nil and empty DeniedEndpointCIDRs are BaseEqual")
	}
}

// TestSameRouteCoversEveryField changes each field of a route's copy in turn, to another value or
// to an equal one elsewhere in memory: SameRoute must notice each, or a proxy would take one
// route's checks or compiled form for another's.
func TestSameRouteCoversEveryField(t *testing.T) {
	var r Route
	fill(reflect.ValueOf(&r).Elem(), map[reflect.Type]bool{})
	if c := r; !SameRoute(&r, &c) {
		t.Fatal("a copy of a route is not the same route")
	}
	// The fields SameRoute compares: those of Route, and of its Match and Filters.
	var changes []string
	var walk func(v reflect.Value, path string)
	walk = func(v reflect.Value, path string) {
		for i := range v.NumField() {
			f, name := v.Field(i), path+"."+v.Type().Field(i).Name
			switch {
			case f.Kind() == reflect.Struct && f.Type() != reflect.TypeFor[Timeouts]():
				walk(f, name)
			default:
				changes = append(changes, name)
			}
		}
	}
	walk(reflect.ValueOf(&r).Elem(), "Route")
	for n, name := range changes {
		c := r
		i := 0
		var change func(v reflect.Value)
		change = func(v reflect.Value) {
			for j := range v.NumField() {
				f := v.Field(j)
				if f.Kind() == reflect.Struct && f.Type() != reflect.TypeFor[Timeouts]() {
					change(f)
					continue
				}
				if i++; i-1 != n {
					continue
				}
				switch f.Kind() {
				case reflect.String:
					f.SetString(f.String() + "x")
				case reflect.Pointer: // an equal value elsewhere
					p := reflect.New(f.Type().Elem())
					p.Elem().Set(f.Elem())
					f.Set(p)
				case reflect.Slice: // an equal slice elsewhere
					s := reflect.MakeSlice(f.Type(), f.Len(), f.Len())
					reflect.Copy(s, f)
					f.Set(s)
				case reflect.Struct: // Timeouts
					f.Field(0).SetInt(f.Field(0).Int() + 1)
				default:
					t.Fatalf("%s: a field of kind %s", name, f.Kind())
				}
			}
		}
		change(reflect.ValueOf(&c).Elem())
		if SameRoute(&r, &c) || SameRoute(&c, &r) {
			t.Errorf("SameRoute misses a change of %s", name)
		}
	}
	if len(changes) < 14 {
		t.Errorf("only %d fields changed: %v", len(changes), changes)
	}
}
