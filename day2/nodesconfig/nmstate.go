package nodesconfig

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// The nmstate subset that Keyfiles turns into NetworkManager keyfiles, as
// typed structs. Field names are nmstate's YAML keys (nmstate.io, "YAML API");
// anything else is refused, naming the key. nodes-config.yaml carries the
// nmstate as free-form YAML (Host.NetworkConfig), so it is decoded into these
// types by decodeStrict, with messages that say where the problem is.

// nmState is one host's networkConfig. Interfaces stay raw here: each is
// decoded on its own so that messages can name the interface.
type nmState struct {
	Interfaces  []any        `json:"interfaces"`
	Routes      *nmRoutes    `json:"routes"`
	DNSResolver *nmDNSConfig `json:"dns-resolver"`
}

type nmInterface struct {
	Name            string     `json:"name"`
	Type            string     `json:"type"`
	State           string     `json:"state"`
	MTU             *int       `json:"mtu"`
	MACAddress      string     `json:"mac-address"`
	IPv4            *nmIPv4    `json:"ipv4"`
	IPv6            *nmIPv6    `json:"ipv6"`
	VLAN            *nmVLAN    `json:"vlan"`
	LinkAggregation *nmBonding `json:"link-aggregation"`
}

type nmVLAN struct {
	BaseIface string `json:"base-iface"`
	ID        *int   `json:"id"`
}

type nmBonding struct {
	Mode    scalar            `json:"mode"`
	Port    []string          `json:"port"`
	Options map[string]string `json:"options"`
}

type nmIPv4 struct {
	Enabled *bool       `json:"enabled"`
	DHCP    *bool       `json:"dhcp"`
	Address []nmAddress `json:"address"`
}

type nmIPv6 struct {
	Enabled  *bool       `json:"enabled"`
	DHCP     *bool       `json:"dhcp"`
	Autoconf *bool       `json:"autoconf"`
	Address  []nmAddress `json:"address"`
}

type nmAddress struct {
	IP           string `json:"ip"`
	PrefixLength *int   `json:"prefix-length"`
}

type nmRoutes struct {
	Config []nmRoute `json:"config"`
}

type nmRoute struct {
	Destination      string `json:"destination"`
	NextHopAddress   string `json:"next-hop-address"`
	NextHopInterface string `json:"next-hop-interface"`
	Metric           *int   `json:"metric"`
	TableID          *int   `json:"table-id"`
}

type nmDNSConfig struct {
	Config *nmDNS `json:"config"`
}

type nmDNS struct {
	Server []string `json:"server"`
	Search []string `json:"search"`
}

// scalar is a string that may be written as a number too (nmstate reads bond
// modes through NumberAsString: mode 4 is 802.3ad).
type scalar string

var scalarType = reflect.TypeOf(scalar(""))

// where names a place in the nmstate for messages: base, then sep and the
// path below it ("networkConfig" "." "routes.config[0]"; `networkConfig
// interface "eth0"` ": " "vlan.id").
type where struct{ base, sep string }

func (w where) at(path string) string {
	if path == "" {
		return w.base
	}
	return w.base + w.sep + path
}

// decodeStrict fills out (a pointer to one of the types above) from YAML
// decoded as JSON-compatible data. Every key must be a field of the type; a
// missing or null key leaves the field at its zero value, except that a null
// mapping still counts as given (an empty mapping). Integers may be written as
// numbers or numeric strings, as nmstate accepts; bond options take any
// scalar.
func decodeStrict(in any, out any, w where) error {
	return decodeValue(in, reflect.ValueOf(out).Elem(), w, "")
}

func decodeValue(in any, v reflect.Value, w where, path string) error {
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		return decodeValue(in, v.Elem(), w, path)
	case reflect.Struct:
		return decodeStruct(in, v, w, path)
	case reflect.Slice:
		if in == nil {
			return nil
		}
		l, ok := in.([]any)
		if !ok {
			return fmt.Errorf("%s must be a list", w.at(path))
		}
		s := reflect.MakeSlice(v.Type(), len(l), len(l))
		for i, e := range l {
			if err := decodeValue(e, s.Index(i), w, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		v.Set(s)
	case reflect.Map: // map[string]string: bond options
		if in == nil {
			return nil
		}
		m, ok := in.(map[string]any)
		if !ok {
			return fmt.Errorf("%s must be a mapping", w.at(path))
		}
		out := make(map[string]string, len(m))
		for k, e := range m {
			s, err := scalarString(e)
			if err != nil {
				return fmt.Errorf("%s.%s %v", w.at(path), k, err)
			}
			out[k] = s
		}
		v.Set(reflect.ValueOf(out))
	case reflect.String:
		if v.Type() == scalarType && in != nil {
			str, err := scalarString(in)
			if err != nil {
				return fmt.Errorf("%s %v", w.at(path), err)
			}
			v.SetString(str)
			return nil
		}
		s, ok := in.(string)
		if !ok && in != nil {
			return fmt.Errorf("%s must be a string, not %v", w.at(path), in)
		}
		v.SetString(s)
	case reflect.Bool:
		b, ok := in.(bool)
		if !ok {
			return fmt.Errorf("%s must be true or false, not %v", w.at(path), in)
		}
		v.SetBool(b)
	case reflect.Int:
		n, ok := asInteger(in)
		if !ok {
			return fmt.Errorf("%s must be an integer, not %v", w.at(path), in)
		}
		v.SetInt(int64(n))
	case reflect.Interface: // kept raw
		if in != nil {
			v.Set(reflect.ValueOf(in))
		}
	default:
		return fmt.Errorf("%s: cannot decode into %s", w.at(path), v.Type())
	}
	return nil
}

func decodeStruct(in any, v reflect.Value, w where, path string) error {
	m, ok := in.(map[string]any)
	if !ok && in != nil {
		return fmt.Errorf("%s must be a mapping", w.at(path))
	}
	t := v.Type()
	fields := map[string]int{}
	names := make([]string, 0, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		name := t.Field(i).Tag.Get("json")
		fields[name] = i
		names = append(names, name)
	}
	var unknown []string
	for k := range m {
		if _, ok := fields[k]; !ok {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Errorf("%s: %s not supported (add-nodes turns nmstate into NetworkManager keyfiles at build time and supports %s)", w.at(path), strings.Join(unknown, ", "), strings.Join(names, ", "))
	}
	for _, name := range names {
		raw, ok := m[name]
		if !ok {
			continue
		}
		f := v.Field(fields[name])
		if raw == nil && f.Kind() != reflect.Pointer {
			continue
		}
		sub := name
		if path != "" {
			sub = path + "." + name
		}
		if err := decodeValue(raw, f, w, sub); err != nil {
			return err
		}
	}
	return nil
}

// asInteger takes a whole number (JSON numbers decode as float64) or a
// string holding one.
func asInteger(v any) (int, bool) {
	switch n := v.(type) {
	case float64:
		if n == float64(int(n)) {
			return int(n), true
		}
	case int:
		return n, true
	case int64:
		return int(n), true
	case string:
		if i, err := strconv.Atoi(n); err == nil {
			return i, true
		}
	}
	return 0, false
}

// scalarString writes a bond option's value as NetworkManager reads it:
// whole numbers without an exponent (miimon: 1000000, not 1e+06).
func scalarString(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case bool:
		return strconv.FormatBool(x), nil
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), nil
	case int:
		return strconv.Itoa(x), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	}
	return "", fmt.Errorf("must be a number or a string, not %v", v)
}
