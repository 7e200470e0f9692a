//go:build !linux

package main

import "errors"

func serveFloor(string, string) error { return errors.New("cannot serve the floor: it needs Linux") }
