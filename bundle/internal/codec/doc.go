// Package codec turns a layer's plaintext into the bytes of its blob and
// back: independent zstd frames compressed on several cores, raw frames for
// content that is already compressed, the age v1 payload sealed and opened a
// batch of chunks at a time, and the pipeline of goroutines that reads a
// blob (read-ahead, decryption, frame decoding) while the caller consumes
// it. docs/bundle-format.md specifies the bytes; docs/architecture.md says
// how the stages overlap.
//
// Its exported names are few: NewLayerWriter and NewLayerEncoder (the write
// side, a blob or the parts of a layer in turn), NewLayerReader (the read
// side, one blob, with Reuse between the parts of a layer), NewCompressor,
// EncoderID, and the reader's errors (TamperedError, FormatError).
//
// It knows nothing of manifests, media types, descriptors or digests: the
// caller (package bundle, the only importer) hands it a writer to fill, or
// a Blob whose reader checks the stored bytes as they stream, and names its
// own errors (Blob.Cause, Blob.Typed), which pass through unchanged. It
// never decides what a failure means for the bundle: bundle maps
// TamperedError and FormatError to its typed errors.
package codec
