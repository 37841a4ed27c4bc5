package codec

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"testing/iotest"

	"filippo.io/age"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/internal/pipe"
)

// The decrypter must accept exactly what age writes and read exactly what age
// reads, at every size around the chunk boundaries, whatever the read sizes.
func TestAgeDecrypterMatchesAge(t *testing.T) {
	id := newIdentity(t)
	other := newIdentity(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{0, 1, 100, ageChunk - 1, ageChunk, ageChunk + 1, 2 * ageChunk, 2*ageChunk + 17, 5*ageChunk - 3,
		// Around the batches the decrypter opens at once (ageBatch chunks).
		ageMinSplit * ageChunk, ageBatch*ageChunk - 1, ageBatch * ageChunk, ageBatch*ageChunk + 1, 2*ageBatch*ageChunk + ageChunk/2, (2*ageBatch+ageMinSplit)*ageChunk - 5} {
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
			if got, err := decryptPiped(enc.Bytes(), id, step); err != nil || !bytes.Equal(got, plain) {
				t.Fatalf("size %d step %d, lent batches: %d bytes, %v", size, step, len(got), err)
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
			if _, err := decryptPiped(ct[:cut], id, 4096); err == nil {
				t.Errorf("size %d, lent batches: truncated to %d of %d bytes: accepted", size, cut, len(ct))
			}
		}
		if _, err := decryptAll(append(bytes.Clone(ct), 0), id, false); err == nil {
			t.Errorf("size %d: a byte appended: accepted", size)
		}
		if _, err := decryptPiped(append(bytes.Clone(ct), 0), id, 4096); err == nil {
			t.Errorf("size %d, lent batches: a byte appended: accepted", size)
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

func newIdentity(t testing.TB) *age.X25519Identity {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	return id
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

// decryptPiped decrypts ct as a pull does: the header read first, the
// payload lent by a prefetcher whose buffers hold whole batches, filled
// from a source that returns a few bytes at a time and never its end early.
func decryptPiped(ct []byte, id age.Identity, step int) ([]byte, error) {
	src := iotest.HalfReader(bytes.NewReader(ct))
	aead, rest, err := readAgePayloadKey(src, []age.Identity{id})
	if err != nil {
		return nil, err
	}
	raw := pipe.NewPrefetcher(io.MultiReader(bytes.NewReader(rest), src), nil, nil, ageBatch*ageSealed)
	defer raw.Close(nil)
	return readInSteps(newAgeDecrypterOn(raw, aead), step)
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

// A chunk altered anywhere in a batch (in either goroutine's half, in the
// first batch or a later one) is refused, and nothing of its batch is
// returned: what was read before it is only the earlier batches' plaintext.
func TestAgeDecrypterRefusesAnAlteredChunkInABatch(t *testing.T) {
	id := newIdentity(t)
	plain := bytes.Repeat([]byte("0123456789abcdef"), (2*ageBatch+3)*ageChunk/16)
	var enc bytes.Buffer
	w, err := age.Encrypt(&enc, id.Recipient())
	if err != nil {
		t.Fatal(err)
	}
	w.Write(plain)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	ct := enc.Bytes()
	payload := len(ct) - (2*ageBatch+3)*ageSealed // header and nonce
	for _, chunk := range []int{0, 3, ageBatch/2 + 1, ageBatch - 1, ageBatch + 5, 2 * ageBatch, 2*ageBatch + 2} {
		bad := bytes.Clone(ct)
		bad[payload+chunk*ageSealed+100] ^= 0x40
		if _, ageErr := decryptAll(bad, id, true); ageErr == nil {
			t.Fatalf("chunk %d: age itself accepts the altered stream", chunk)
		}
		d, err := newAgeDecrypter(bytes.NewReader(bad), []age.Identity{id})
		if err != nil {
			t.Fatal(err)
		}
		got, err := readInSteps(d, 1<<16)
		if err == nil {
			t.Fatalf("chunk %d altered: accepted", chunk)
		}
		if want := chunk / ageBatch * ageBatch * ageChunk; len(got) != want || !bytes.Equal(got, plain[:want]) {
			t.Fatalf("chunk %d altered: %d bytes came out before the error, want the %d of the earlier batches", chunk, len(got), want)
		}
	}
}

// What the encrypter writes, age reads back (and so does the decrypter), at
// every size around the chunk and batch boundaries, whatever the write
// sizes; with a post-quantum recipient too (its labels kept), and two
// recipients each of which can decrypt.
func TestAgeEncrypterAgeReads(t *testing.T) {
	id, other := newIdentity(t), newIdentity(t)
	pq, err := age.GenerateHybridIdentity()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	sizes := []int{0, 1, ageChunk - 1, ageChunk, ageChunk + 1, ageMinSplit*ageChunk + 3, ageBatch*ageChunk - 1, ageBatch * ageChunk, ageBatch*ageChunk + 1, 2*ageBatch*ageChunk + ageChunk/3}
	for _, size := range sizes {
		plain := make([]byte, size)
		for i := range plain {
			plain[i] = byte(rng.Uint32())
		}
		for _, step := range []int{1 << 20, 7919, ageChunk} {
			if size > 3*ageChunk && step == 7919 {
				continue // the small steps cover the boundaries already
			}
			for _, rc := range []struct {
				name string
				to   []age.Recipient
				ids  []age.Identity
			}{
				{"x25519", []age.Recipient{other.Recipient(), id.Recipient()}, []age.Identity{id, other}},
				{"hybrid", []age.Recipient{pq.Recipient()}, []age.Identity{pq}},
			} {
				for _, dst := range []string{"buffer", "filler", "small filler"} {
					var enc bytes.Buffer
					var out io.Writer = &enc
					var aw *pipe.AsyncWriter
					switch dst {
					case "filler": // sealed in place in its buffers
						aw = pipe.NewAsyncWriter(&enc, SealedBatch, 2)
					case "small filler": // too small for a batch: sealed aside, then written
						aw = pipe.NewAsyncWriter(&enc, SealedBatch-1, 2)
					}
					if aw != nil {
						out = aw
					}
					w, err := newAgeEncrypter(out, rc.to...)
					if err != nil {
						t.Fatal(err)
					}
					if (w.fill != nil) != (dst == "filler") {
						t.Fatalf("%s: sealed in place: %v", dst, w.fill != nil)
					}
					src := bytes.Clone(plain)
					for p := src; len(p) > 0; {
						n := min(step, len(p))
						if _, err := w.Write(p[:n]); err != nil {
							t.Fatal(err)
						}
						// The caller may reuse its buffer once Write returned.
						for i := range p[:n] {
							p[i] = ^p[i]
						}
						p = p[n:]
					}
					if err := w.Close(); err != nil {
						t.Fatal(err)
					}
					if aw != nil {
						if err := aw.Close(); err != nil {
							t.Fatal(err)
						}
					}
					for _, ident := range rc.ids {
						r, err := age.Decrypt(bytes.NewReader(enc.Bytes()), ident)
						if err != nil {
							t.Fatalf("%s %s size %d step %d: age: %v", rc.name, dst, size, step, err)
						}
						got, err := io.ReadAll(r)
						if err != nil || !bytes.Equal(got, plain) {
							t.Fatalf("%s %s size %d step %d: age reads %d bytes (%v), want the %d written", rc.name, dst, size, step, len(got), err, size)
						}
					}
					got, err := decryptAll(enc.Bytes(), rc.ids[0], false)
					if err != nil || !bytes.Equal(got, plain) {
						t.Fatalf("%s size %d step %d: the decrypter reads %d bytes (%v)", rc.name, size, step, len(got), err)
					}
				}
			}
		}
	}
}

// FuzzAgeStream differential-tests the payload code against filippo.io/age
// both ways: what the encrypter writes, age reads; what age writes, the
// decrypter reads; and a ciphertext with one byte of its payload altered,
// cut short or extended is refused by the decrypter exactly when age refuses
// it. The plaintext is the input repeated to size (so streams cross chunk
// and batch boundaries), split into writes of step bytes.
func FuzzAgeStream(f *testing.F) {
	id := newIdentity(f)
	f.Add([]byte("abc"), uint32(0), uint16(1), uint32(0), byte(0))
	f.Add([]byte{0}, uint32(ageChunk), uint16(4096), uint32(ageChunk+3), byte(1))
	f.Add([]byte("chunk"), uint32(ageBatch*ageChunk), uint16(65535), uint32(7), byte(2))
	f.Add([]byte("x"), uint32(ageBatch*ageChunk+1), uint16(100), uint32(1), byte(3))
	f.Fuzz(func(t *testing.T, seed []byte, size uint32, step uint16, at uint32, op byte) {
		size %= 3*ageBatch*ageChunk + 1
		if len(seed) == 0 {
			seed = []byte{0}
		}
		plain := bytes.Repeat(seed, int(size)/len(seed)+1)[:size]
		st := max(int(step), 1)
		// Ours, read by age.
		var ours bytes.Buffer
		w, err := newAgeEncrypter(&ours, id.Recipient())
		if err != nil {
			t.Fatal(err)
		}
		for p := plain; len(p) > 0; p = p[min(st, len(p)):] {
			w.Write(p[:min(st, len(p))])
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if got, err := decryptAll(ours.Bytes(), id, true); err != nil || !bytes.Equal(got, plain) {
			t.Fatalf("age reads %d of the %d bytes the encrypter wrote: %v", len(got), size, err)
		}
		// Age's, read by the decrypter.
		var theirs bytes.Buffer
		aw, err := age.Encrypt(&theirs, id.Recipient())
		if err != nil {
			t.Fatal(err)
		}
		aw.Write(plain)
		aw.Close()
		if got, err := decryptAll(theirs.Bytes(), id, false); err != nil || !bytes.Equal(got, plain) {
			t.Fatalf("the decrypter reads %d of the %d bytes age wrote: %v", len(got), size, err)
		}
		// Damage, judged by age and by the decrypter alike.
		ct := bytes.Clone(ours.Bytes())
		payload := len(ct) - int(size) - ageTag*max(1, (int(size)+ageChunk-1)/ageChunk)
		i := payload + int(at)%(len(ct)-payload)
		switch op % 3 {
		case 0:
			ct[i] ^= 1 << (op / 3 % 8)
		case 1:
			ct = ct[:i]
		case 2:
			ct = append(ct, byte(at))
		}
		_, ageErr := decryptAll(ct, id, true)
		got, err := decryptAll(ct, id, false)
		if (ageErr == nil) != (err == nil) {
			t.Fatalf("op %d at %d: age says %v, the decrypter %v", op%3, i, ageErr, err)
		}
		if err == nil && !bytes.Equal(got, plain) {
			t.Fatal("accepted a different plaintext")
		}
		piped, perr := decryptPiped(ct, id, st)
		if (ageErr == nil) != (perr == nil) {
			t.Fatalf("op %d at %d: age says %v, the decrypter on lent batches %v", op%3, i, ageErr, perr)
		}
		if perr == nil && !bytes.Equal(piped, plain) {
			t.Fatal("lent batches: accepted a different plaintext")
		}
	})
}
