# Address segmentation (data/address-*.txt): column 0 token, column 1 shape.
# Wapiti syntax: u = unigram, b = bigram, * = both; %X folds case,
# %t tests a regex, %m extracts what it matches.

u:w-1=%X[-1,0]
u:w0=%X[0,0]
u:w+1=%X[1,0]
u:w-1/w0=%X[-1,0]/%X[0,0]
u:w0/w+1=%X[0,0]/%X[1,0]
u:s-1=%x[-1,1]
u:s0=%x[0,1]
u:s+1=%x[1,1]
u:s-2/s-1/s0=%x[-2,1]/%x[-1,1]/%x[0,1]
u:cap=%t[0,0,"^\u"]
u:num=%t[0,0,"^\d*$"]
u:suf3=%m[0,0,".?.?.$"]
u:pos=%x[@1,1]/%t[0,0,"\p"]
*
