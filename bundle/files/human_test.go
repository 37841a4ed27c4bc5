package files

import "testing"

func TestHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{
		0:             "0 B",
		1023:          "1023 B",
		1024:          "1.0 KiB",
		1536:          "1.5 KiB",
		5 << 20:       "5.0 MiB",
		3 << 30:       "3.0 GiB",
		1<<40 + 1<<39: "1.5 TiB",
		1<<62 + 1<<61: "6.0 EiB",
	} {
		if got := HumanBytes(n); got != want {
			t.Errorf("HumanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
