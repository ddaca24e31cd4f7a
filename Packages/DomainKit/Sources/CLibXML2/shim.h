// libxml2's push parser (SAX2), which DomainKit's GPX reader is built on. Debian: libxml2-dev.
#include <libxml/xmlversion.h>
// A libxml2 built with ICU includes <unicode/ucnv.h> for one field of xmlCharEncodingHandler, and the system ICU
// headers clash with Foundation's own copy (_FoundationICU). DomainKit never touches that struct, so leave it out.
#undef LIBXML_ICU_ENABLED
#include <libxml/parser.h>
#include <libxml/xmlerror.h>
