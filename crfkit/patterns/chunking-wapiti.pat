# Wapiti-style patterns for CoNLL-2000 chunking: nearly every observation is '*'.
# Column 0 is the word, column 1 the part-of-speech tag (the chunk tag, last
# column, is the label).
#
# '*' makes each observation both a unigram feature (observation x label) and
# an observation-dependent bigram (observation x previous label x label), the
# style of Wapiti's own examples: L^2 + L weights per observation instead of L.
# Wapiti and CRF++ give every observation all L^2 + L weights (crfkit only the
# combinations seen), so the '*' patterns are the ones with few distinct values
# (part-of-speech n-grams and the current word): with every word pattern '*',
# Wapiti and CRF++ needed 277M weights and ran out of memory on 23 GB.
# Only %x commands, so scripts/bench.py can hand the same features to CRF++
# (each '*' line becomes a U line and a B line there). Used by the benchmark's
# rich-pattern case: `python scripts/bench.py --pattern patterns/chunking-wapiti.pat`.

# Words: a +-2 window, the two bigrams around the current word, and the
# word with the tags around it (unigram features); the current word also
# conditions the transition
u:w-2=%x[-2,0]
u:w-1=%x[-1,0]
*:w0=%x[0,0]
u:w+1=%x[1,0]
u:w+2=%x[2,0]
u:w-1|w0=%x[-1,0]|%x[0,0]
u:w0|w+1=%x[0,0]|%x[1,0]
u:w0|p0=%x[0,0]|%x[0,1]
u:w0|p-1=%x[0,0]|%x[-1,1]
u:w0|p+1=%x[0,0]|%x[1,1]
u:w-1|p0=%x[-1,0]|%x[0,1]
u:w+1|p0=%x[1,0]|%x[0,1]

# Part of speech, all '*': a +-3 window, bigrams, skip bigrams and the
# trigrams around the current tag
*:p-3=%x[-3,1]
*:p-2=%x[-2,1]
*:p-1=%x[-1,1]
*:p0=%x[0,1]
*:p+1=%x[1,1]
*:p+2=%x[2,1]
*:p+3=%x[3,1]
*:p-2|p-1=%x[-2,1]|%x[-1,1]
*:p-1|p0=%x[-1,1]|%x[0,1]
*:p0|p+1=%x[0,1]|%x[1,1]
*:p+1|p+2=%x[1,1]|%x[2,1]
*:p-2|p0=%x[-2,1]|%x[0,1]
*:p0|p+2=%x[0,1]|%x[2,1]
*:p-1|p+1=%x[-1,1]|%x[1,1]
*:p-3|p0=%x[-3,1]|%x[0,1]
*:p0|p+3=%x[0,1]|%x[3,1]
*:p-2|p-1|p0=%x[-2,1]|%x[-1,1]|%x[0,1]
*:p-1|p0|p+1=%x[-1,1]|%x[0,1]|%x[1,1]
*:p0|p+1|p+2=%x[0,1]|%x[1,1]|%x[2,1]

# Plain label transitions
b
