# Named-entity patterns for CoNLL-2002 Dutch (ned.*), crfkit / Wapiti syntax: the linear chain.
# Column 0 is the word, column 1 the part-of-speech tag; the last column, the
# entity tag (IOB2: B-PER, I-LOC, ...), is the label.
#
# Words in a +-2 window (case folded), the exact current word, a word bigram
u:w-2=%X[-2,0]
u:w-1=%X[-1,0]
u:w0=%X[0,0]
u:w+1=%X[1,0]
u:w+2=%X[2,0]
u:W0=%x[0,0]
u:w-1/w0=%X[-1,0]/%X[0,0]
u:w0/w+1=%X[0,0]/%X[1,0]

# Part of speech around the current token
u:p-1=%x[-1,1]
u:p0=%x[0,1]
u:p+1=%x[1,1]

# Shape of the current word and its neighbours: capitalised, all caps, digits
u:cap-1=%t[-1,0,"^\u"]
u:cap0=%t[0,0,"^\u"]
u:cap+1=%t[1,0,"^\u"]
u:caps0=%t[0,0,"^\u\u*$"]
u:num0=%t[0,0,"\d"]
u:hyph0=%t[0,0,"-"]

# Affixes of the current word
u:pre3=%M[0,0,"^..."]
u:suf3=%M[0,0,"...$"]

# Label transitions
B

# Skip edges (a skip-chain CRF): within a document, join each capitalised word
# to its next occurrence (%m of a word without an upper-case first letter is
# empty: no key), sentence-initial ones included.
s:cap=%m[0,0,"^\u.*"]

# Skip-edge observations: each value found at either end of an edge gives it
# its own label-pair weights, so the model can trust some edges more than
# others: an end that starts its sentence (init=false: "De", "Het" and names
# alike), an end's part of speech, whether its neighbours are capitalised
# (inside a longer name), and the word itself (case folded).
e:init=%t[-1,0,"."]
e:pos=%x[0,1]
e:in=%t[-1,0,"^\u"]%t[1,0,"^\u"]
e:w=%X[0,0]
