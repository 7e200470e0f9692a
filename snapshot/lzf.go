package snapshot

import "fmt"

// lzfDecompress expands LZF data into exactly n bytes.
func lzfDecompress(in []byte, n int) ([]byte, error) {
	out := make([]byte, 0, n)
	for i := 0; i < len(in); {
		ctrl := int(in[i])
		i++
		if ctrl < 32 { // a literal run of ctrl+1 bytes
			run := ctrl + 1
			if i+run > len(in) || len(out)+run > n {
				return nil, fmt.Errorf("%w: LZF literal past the end", ErrCorrupt)
			}
			out = append(out, in[i:i+run]...)
			i += run
			continue
		}
		length := ctrl >> 5
		if length == 7 {
			if i >= len(in) {
				return nil, fmt.Errorf("%w: LZF reference cut short", ErrCorrupt)
			}
			length += int(in[i])
			i++
		}
		if i >= len(in) {
			return nil, fmt.Errorf("%w: LZF reference cut short", ErrCorrupt)
		}
		ref := len(out) - (ctrl&0x1F)<<8 - 1 - int(in[i])
		i++
		length += 2
		if ref < 0 || len(out)+length > n {
			return nil, fmt.Errorf("%w: LZF reference out of range", ErrCorrupt)
		}
		for j := range length { // may overlap what it writes
			out = append(out, out[ref+j])
		}
	}
	if len(out) != n {
		return nil, fmt.Errorf("%w: LZF data expands to %d bytes, not %d", ErrCorrupt, len(out), n)
	}
	return out, nil
}
