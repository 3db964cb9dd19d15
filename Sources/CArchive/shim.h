#ifndef SATCHEL_CARCHIVE_SHIM_H
#define SATCHEL_CARCHIVE_SHIM_H
#include <archive.h>
#include <archive_entry.h>

// Swift cannot import function-like or computed macros; re-export the ones Satchel needs as constants.
static const unsigned int SATCHEL_AE_IFMT = AE_IFMT;
static const unsigned int SATCHEL_AE_IFREG = AE_IFREG;
static const unsigned int SATCHEL_AE_IFDIR = AE_IFDIR;
static const unsigned int SATCHEL_AE_IFLNK = AE_IFLNK;
static const unsigned int SATCHEL_AE_IFCHR = AE_IFCHR;
static const unsigned int SATCHEL_AE_IFBLK = AE_IFBLK;
static const unsigned int SATCHEL_AE_IFIFO = AE_IFIFO;
static const unsigned int SATCHEL_AE_IFSOCK = AE_IFSOCK;

static const int SATCHEL_ARCHIVE_OK = ARCHIVE_OK;
static const int SATCHEL_ARCHIVE_EOF = ARCHIVE_EOF;
static const int SATCHEL_ARCHIVE_RETRY = ARCHIVE_RETRY;
static const int SATCHEL_ARCHIVE_WARN = ARCHIVE_WARN;
static const int SATCHEL_ARCHIVE_FAILED = ARCHIVE_FAILED;
static const int SATCHEL_ARCHIVE_FATAL = ARCHIVE_FATAL;
#endif
