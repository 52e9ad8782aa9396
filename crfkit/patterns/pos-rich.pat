# Rich part-of-speech patterns for the Brown corpus: words, affixes, shapes.
# Column 0 is the word (the tag, the last column, is the label). crfkit and
# Wapiti syntax; scripts/bench.py gives CRF++ the same features by writing each
# %X/%t/%M value as an extra column (CRF++ templates read %x only), which is why
# every %t and %M command reads the current token: only %x and %X look at the
# neighbours. `scripts/bench.py --corpus brown --pattern patterns/pos-rich.pat`
#
# Kinds: u = unigram (observation x label). %x token, %X case folded, %t true/false
# regex test, %M first regex match, case folded. Regexes are Wapiti's: \u upper case,
# \d digit, \p punctuation, . any character, * repeat, ^ $ anchors.

# Words: the exact current word, the case-folded word and its neighbours within +-2
u:w0=%x[0,0]
u:W0=%X[0,0]
u:W-2=%X[-2,0]
u:W-1=%X[-1,0]
u:W+1=%X[1,0]
u:W+2=%X[2,0]
u:W-1/W0=%X[-1,0]/%X[0,0]
u:W0/W+1=%X[0,0]/%X[1,0]

# Prefixes and suffixes of 1 to 4 characters, case folded (empty when shorter)
u:pre1=%M[0,0,"^."]
u:pre2=%M[0,0,"^.."]
u:pre3=%M[0,0,"^..."]
u:pre4=%M[0,0,"^...."]
u:suf1=%M[0,0,".$"]
u:suf2=%M[0,0,"..$"]
u:suf3=%M[0,0,"...$"]
u:suf4=%M[0,0,"....$"]

# Shape classes: capitalised, all capitals, has a digit, a number, has a hyphen,
# punctuation only; and the four tests that separate most shapes, together
u:cap=%t[0,0,"^\u"]
u:allcap=%t[0,0,"^\u\u*$"]
u:digit=%t[0,0,"\d"]
u:number=%t[0,0,"^\d\d*$"]
u:hyphen=%t[0,0,"-"]
u:punct=%t[0,0,"^\p\p*$"]
u:shape=%t[0,0,"^\u"]/%t[0,0,"\d"]/%t[0,0,"-"]/%t[0,0,"^\p\p*$"]

# Label bias and label transitions
U
B
