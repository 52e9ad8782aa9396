# Wapiti-style patterns for CoNLL-2000 chunking: nearly every observation is '*'.
# Column 0 is the word, column 1 the part-of-speech tag (the chunk tag, last
# column, is the label).
#
# '*' makes each observation both a unigram feature (observation x label) and
# an observation-dependent bigram (observation x previous label x label), the
# style of Wapiti's own examples: L^2 + L weights per observation instead of L.
# Only %x commands, so scripts/bench.py can hand the same features to CRF++
# (each '*' line becomes a U line and a B line there). Used by the benchmark's
# rich-pattern case: `python scripts/bench.py --pattern patterns/chunking-wapiti.pat`.

# Words: a +-2 window and the two bigrams around the current word
*:w-2=%x[-2,0]
*:w-1=%x[-1,0]
*:w0=%x[0,0]
*:w+1=%x[1,0]
*:w+2=%x[2,0]
*:w-1|w0=%x[-1,0]|%x[0,0]
*:w0|w+1=%x[0,0]|%x[1,0]

# Part of speech: a +-2 window, its bigrams and the trigrams around the current tag
*:p-2=%x[-2,1]
*:p-1=%x[-1,1]
*:p0=%x[0,1]
*:p+1=%x[1,1]
*:p+2=%x[2,1]
*:p-2|p-1=%x[-2,1]|%x[-1,1]
*:p-1|p0=%x[-1,1]|%x[0,1]
*:p0|p+1=%x[0,1]|%x[1,1]
*:p+1|p+2=%x[1,1]|%x[2,1]
*:p-2|p-1|p0=%x[-2,1]|%x[-1,1]|%x[0,1]
*:p-1|p0|p+1=%x[-1,1]|%x[0,1]|%x[1,1]
*:p0|p+1|p+2=%x[0,1]|%x[1,1]|%x[2,1]

# A word with the tags around it
*:w0|p0=%x[0,0]|%x[0,1]
*:w0|p-1=%x[0,0]|%x[-1,1]
*:w0|p+1=%x[0,0]|%x[1,1]
*:w-1|p0=%x[-1,0]|%x[0,1]
*:w+1|p0=%x[1,0]|%x[0,1]

# Plain label transitions
b
