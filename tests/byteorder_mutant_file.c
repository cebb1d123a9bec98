/* lib/file.c with its writer storing words most significant byte first, as
 * a writer of host-order words would on a big-endian host: the mutant that
 * check_byteorder_mutant links instead of libram's file.c, so that the
 * suite shows check_byteorder failing when the file's byte order is not
 * the one it promises (tests/CMakeLists.txt expects both its checks to
 * fail). */
#define RAM_TEST_WRITER_BIG_ENDIAN_HOST_ORDER
#include "../lib/file.c"
