module github.com/distcache/distcache

go 1.26.8

require github.com/zeebo/xxh3 v1.0.2

require github.com/klauspost/cpuid/v2 v2.0.9 // indirect
