# Part-of-speech tagging from words alone (CoNLL-2000 with column 1 as the
# label: `scripts/bench.py --label-column 1 --pattern patterns/pos.pat`).
# Only %x commands, so python-crfsuite, CRF++ and Wapiti see the same features.

# Words in a +-2 window, then word bigrams around the current word
U00:%x[-2,0]
U01:%x[-1,0]
U02:%x[0,0]
U03:%x[1,0]
U04:%x[2,0]
U05:%x[-1,0]/%x[0,0]
U06:%x[0,0]/%x[1,0]

# Bigram: label transitions
B
