package partmap

import "strings"

// HashTag is the part of key that places it when the map's storage honours
// hash tags (Storage.HashTags), by Redis Cluster's rule: the text between
// the key's first '{' and the first '}' after it, when that text is not
// empty; else the whole key. Keys that share a tag share a rack and a
// shard, so that one Redis can run a transaction or a script on them.
func HashTag(key string) string {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if end := strings.IndexByte(key[open+1:], '}'); end > 0 {
			return key[open+1 : open+1+end]
		}
	}
	return key
}

// storageKey is what places key on a rack and a shard.
func (p *Placement) storageKey(key string) string {
	if p.m.Storage.HashTags {
		return HashTag(key)
	}
	return key
}
