// Package utf8text is the one rule by which execfarm turns bytes a
// program controls (its stdout and stderr, its console lines and test
// results, the names of the files it made) into the text a client
// receives: proto3 strings and JSON must be valid UTF-8, so each maximal
// run of invalid bytes becomes one U+FFFD, strings.ToValidUTF8's rule.
//
// A run of any length becomes 3 bytes and runs are apart by at least one
// valid byte, so n bytes of output become at most 2n+1, where one U+FFFD
// per invalid byte would make binary output three times as long as the
// output limits measured it. A byte is invalid when utf8.DecodeRune
// reads it as RuneError of width 1: a stray continuation byte, 0xC0,
// 0xC1, 0xF5 to 0xFF, a sequence cut short, an overlong or surrogate
// encoding ("\xe2\x82c" is one run of two bytes, then "c"). Valid bytes,
// U+FFFD written by the program included, pass unchanged.
//
// String and Bytes apply the rule to a whole text; a Decoder applies it
// to a stream read in chunks, so that the text of the chunks joined is
// the text of the stream whole, wherever the chunks are cut.
package utf8text
