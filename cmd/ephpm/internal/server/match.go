package server

// Match reports whether s matches the glob pattern p as Redis's SCAN
// MATCH and KEYS read it: * any run, ? one byte, [abc] [^abc] [a-z] a
// class, \x the byte x. It backtracks only to the last *, so no pattern
// takes more than len(p) × len(s) steps.
func Match(p, s []byte) bool {
	px, sx := 0, 0
	starP, starS := -1, 0
	for sx < len(s) {
		if px < len(p) {
			switch p[px] {
			case '*':
				starP, starS = px, sx
				px++
				continue
			case '?':
				px++
				sx++
				continue
			case '[':
				if ok, next := matchClass(p, px, s[sx]); ok {
					px, sx = next, sx+1
					continue
				}
			case '\\':
				if px+1 < len(p) {
					if p[px+1] == s[sx] {
						px, sx = px+2, sx+1
						continue
					}
				} else if s[sx] == '\\' {
					px, sx = px+1, sx+1
					continue
				}
			default:
				if p[px] == s[sx] {
					px, sx = px+1, sx+1
					continue
				}
			}
		}
		if starP < 0 {
			return false
		}
		starS++
		px, sx = starP+1, starS
	}
	for px < len(p) && p[px] == '*' {
		px++
	}
	return px == len(p)
}

// matchClass matches c against the class that opens at p[at] ('['), and
// returns where the pattern goes on after it. A class with no ']' runs to
// the pattern's end.
func matchClass(p []byte, at int, c byte) (bool, int) {
	i := at + 1
	not := i < len(p) && p[i] == '^'
	if not {
		i++
	}
	match := false
	for i < len(p) && p[i] != ']' {
		switch {
		case p[i] == '\\' && i+1 < len(p):
			i++
			match = match || p[i] == c
			i++
		case i+2 < len(p) && p[i+1] == '-' && p[i+2] != ']':
			lo, hi := p[i], p[i+2]
			if lo > hi {
				lo, hi = hi, lo
			}
			match = match || lo <= c && c <= hi
			i += 3
		default:
			match = match || p[i] == c
			i++
		}
	}
	if i < len(p) {
		i++ // the ']'
	}
	return match != not, i
}

// literalPrefix is the part of the glob pattern p before its first special
// byte: every key it matches begins with it, so a walk may leave out the
// keys that do not.
func literalPrefix(p []byte) string {
	for i, c := range p {
		switch c {
		case '*', '?', '[', '\\':
			return string(p[:i])
		}
	}
	return string(p)
}
