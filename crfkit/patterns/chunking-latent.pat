# Rich patterns for CoNLL-2000 chunking with hidden states (crfkit train --latent K).
# patterns/chunking-rich.pat with every observation a unigram ('u:'): latent
# training multiplies the label transitions by K^2 and refuses observation
# bigrams, so the few '*:' patterns of the rich file become 'u:' here and the
# last line is plain label transitions ('b').
# Column 0 is the word, column 1 the part-of-speech tag (the last column, the
# chunk tag, is the label and cannot be read).
#
# %x token, %X case folded, %t/%T true/false regex test, %m/%M first regex
# match (upper case: ignoring case, match case folded).

# Words: +-2 window (case folded), the exact current word, word bigrams
u:w-2=%X[-2,0]
u:w-1=%X[-1,0]
u:w0=%X[0,0]
u:w+1=%X[1,0]
u:w+2=%X[2,0]
u:W0=%x[0,0]
u:w-1/w0=%X[-1,0]/%X[0,0]
u:w0/w+1=%X[0,0]/%X[1,0]

# Part of speech: +-2 window, bigrams, trigrams
u:p-2=%x[-2,1]
u:p-1=%x[-1,1]
u:p0=%x[0,1]
u:p+1=%x[1,1]
u:p+2=%x[2,1]
u:p-2/p-1=%x[-2,1]/%x[-1,1]
u:p-1/p0=%x[-1,1]/%x[0,1]
u:p0/p+1=%x[0,1]/%x[1,1]
u:p+1/p+2=%x[1,1]/%x[2,1]
u:p-2/p-1/p0=%x[-2,1]/%x[-1,1]/%x[0,1]
u:p-1/p0/p+1=%x[-1,1]/%x[0,1]/%x[1,1]
u:p0/p+1/p+2=%x[0,1]/%x[1,1]/%x[2,1]

# Word x POS conjunctions
u:w0/p0=%X[0,0]/%x[0,1]
u:p-1/w0=%x[-1,1]/%X[0,0]
u:w0/p+1=%X[0,0]/%x[1,1]
u:w-1/p0=%X[-1,0]/%x[0,1]
u:p0/w+1=%x[0,1]/%X[1,0]

# Context conjunctions: skip bigrams, word with its POS neighbours, neighbours' suffixes
u:w-1/w+1=%X[-1,0]/%X[1,0]
u:p-2/p0=%x[-2,1]/%x[0,1]
u:p0/p+2=%x[0,1]/%x[2,1]
u:p-1/w0/p0=%x[-1,1]/%X[0,0]/%x[0,1]
u:p0/w0/p+1=%x[0,1]/%X[0,0]/%x[1,1]
u:s3-1=%M[-1,0,"...$"]
u:s3+1=%M[1,0,"...$"]

# Coarse POS classes (first two characters: NN, VB, JJ, ...) and noun/verb tests
u:c-1/c0/c+1=%m[-1,1,"^.?."]/%m[0,1,"^.?."]/%m[1,1,"^.?."]
u:c-2/c-1=%m[-2,1,"^.?."]/%m[-1,1,"^.?."]
u:noun-1/noun0/noun+1=%T[-1,1,"^nn"]/%T[0,1,"^nn"]/%T[1,1,"^nn"]
u:verb-1/verb0=%T[-1,1,"^vb"]/%T[0,1,"^vb"]

# Affixes of the current word, up to 4 characters, ignoring case
u:s1=%M[0,0,".$"]
u:s2=%M[0,0,"..$"]
u:s3=%M[0,0,"...$"]
u:s4=%M[0,0,"....$"]
u:pre2=%M[0,0,"^.."]
u:pre3=%M[0,0,"^..."]
u:pre4=%M[0,0,"^...."]
u:hyphen-tail=%M[0,0,"-\a\a*$"]

# Shape: capitalisation, digits, punctuation
u:cap=%t[0,0,"^\u"]
u:allcap=%t[0,0,"^\u\u*$"]
u:midcap=%t[0,0,".\u"]
u:digit=%t[0,0,"\d"]
u:number=%t[0,0,"^\d\d*$"]
u:punct=%t[0,0,"^\p\p*$"]
u:hyphen=%t[0,0,"\w-\w"]
u:cap-1/cap0/cap+1=%t[-1,0,"^\u"]/%t[0,0,"^\u"]/%t[1,0,"^\u"]
u:cap0/p0=%t[0,0,"^\u"]/%x[0,1]
u:and-1/and+1=%T[-1,0,"^and$"]/%T[1,0,"^and$"]

# Label transitions
b
