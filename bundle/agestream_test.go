package bundle

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"

	"filippo.io/age"
)

// The decrypter must accept exactly what age writes and read exactly what age
// reads, at every size around the chunk boundaries, whatever the read sizes.
func TestAgeDecrypterMatchesAge(t *testing.T) {
	id := newIdentity(t)
	other := newIdentity(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{0, 1, 100, ageChunk - 1, ageChunk, ageChunk + 1, 2 * ageChunk, 2*ageChunk + 17, 5*ageChunk - 3} {
		plain := make([]byte, size)
		for i := range plain {
			plain[i] = byte(rng.Uint32())
		}
		var enc bytes.Buffer
		w, err := age.Encrypt(&enc, other.Recipient(), id.Recipient())
		if err != nil {
			t.Fatal(err)
		}
		w.Write(plain)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		for _, step := range []int{1, 7, 4096, ageChunk, 1 << 20} {
			d, err := newAgeDecrypter(bytes.NewReader(enc.Bytes()), []age.Identity{id})
			if err != nil {
				t.Fatalf("size %d: %v", size, err)
			}
			got, err := readInSteps(d, step)
			if err != nil {
				t.Fatalf("size %d step %d: %v", size, step, err)
			}
			if !bytes.Equal(got, plain) {
				t.Fatalf("size %d step %d: plaintext differs", size, step)
			}
		}
		ct := enc.Bytes()
		// Every truncation and every appended byte is refused, as age does.
		for _, cut := range []int{len(ct) - 1, len(ct) - ageTag, len(ct) - ageTag - 1, len(ct) - ageSealed, len(ct) - ageSealed - 1} {
			if cut <= 0 || cut >= len(ct) {
				continue
			}
			if _, ageErr := decryptAll(ct[:cut], id, true); ageErr == nil {
				continue // not a valid cut point for age either (header)
			}
			if _, err := decryptAll(ct[:cut], id, false); err == nil {
				t.Errorf("size %d: truncated to %d of %d bytes: accepted", size, cut, len(ct))
			}
		}
		if _, err := decryptAll(append(bytes.Clone(ct), 0), id, false); err == nil {
			t.Errorf("size %d: a byte appended: accepted", size)
		}
		if size > 0 {
			flipped := bytes.Clone(ct)
			flipped[len(flipped)-1-rng.IntN(min(size, 200))] ^= 1
			if _, err := decryptAll(flipped, id, false); err == nil {
				t.Errorf("size %d: a flipped payload byte: accepted", size)
			}
		}
	}
}

func TestAgeDecrypterWrongIdentity(t *testing.T) {
	id, other := newIdentity(t), newIdentity(t)
	var enc bytes.Buffer
	w, _ := age.Encrypt(&enc, id.Recipient())
	w.Write([]byte("secret"))
	w.Close()
	_, err := newAgeDecrypter(bytes.NewReader(enc.Bytes()), []age.Identity{other})
	var nim *age.NoIdentityMatchError
	if !errors.As(err, &nim) {
		t.Fatalf("wrong identity: got %v, want a NoIdentityMatchError", err)
	}
	// A header that does not end.
	if _, err := newAgeDecrypter(bytes.NewReader(enc.Bytes()[:30]), []age.Identity{id}); err == nil {
		t.Fatal("cut header: accepted")
	}
	// The header MAC covers the stanzas.
	bad := bytes.Clone(enc.Bytes())
	i := bytes.Index(bad, []byte("-> X25519 ")) + len("-> X25519 ")
	bad[i] ^= 1
	if _, err := newAgeDecrypter(bytes.NewReader(bad), []age.Identity{id}); err == nil {
		t.Fatal("altered stanza: accepted")
	}
}

func decryptAll(ct []byte, id age.Identity, reference bool) ([]byte, error) {
	var r io.Reader
	var err error
	if reference {
		r, err = age.Decrypt(bytes.NewReader(ct), id)
	} else {
		r, err = newAgeDecrypter(bytes.NewReader(ct), []age.Identity{id})
	}
	if err != nil {
		return nil, err
	}
	return io.ReadAll(r)
}

func readInSteps(r io.Reader, step int) ([]byte, error) {
	var out []byte
	buf := make([]byte, step)
	for {
		n, err := r.Read(buf)
		out = append(out, buf[:n]...)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}
