// The system zlib (Debian zlib1g-dev) for the QR code's PNG writer, linked as NetworkingKit's CZlib is.
#include <zlib.h>
