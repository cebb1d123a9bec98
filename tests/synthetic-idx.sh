# Sourced by the shell tests: make_split DIR NAME COUNT SEED writes a tiny
# MNIST-shaped IDX pair DIR/NAME-{images-idx3,labels-idx1}-ubyte (no
# download).  IDX: big-endian header, then bytes.  Pixels come from a fixed
# LCG (awk), so every run sees the same images; labels cycle 0..9.
be32() { printf "\\x$(printf %02x $(($1 >> 24 & 255)))\\x$(printf %02x $(($1 >> 16 & 255)))\\x$(printf %02x $(($1 >> 8 & 255)))\\x$(printf %02x $(($1 & 255)))"; }
make_split() { # dir name count seed
    local f="$1/$2"
    mkdir -p "$1"
    { be32 2051; be32 "$3"; be32 28; be32 28; } >"$f-images-idx3-ubyte"
    awk -v n=$(($3 * 784)) -v s="$4" 'BEGIN { for (i = 0; i < n; i++) {
        s = (s * 1103515245 + 12345) % 2147483648; printf "%c", (s % 7 == 0) ? 255 : 0 } }' \
        | LC_ALL=C cat >>"$f-images-idx3-ubyte"
    { be32 2049; be32 "$3"; } >"$f-labels-idx1-ubyte"
    for ((i = 0; i < $3; i++)); do printf "\\x0$((i % 10))"; done >>"$f-labels-idx1-ubyte"
}
