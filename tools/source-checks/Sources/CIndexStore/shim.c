// Declarations only (include/CIndexStore.h); SwiftPM wants a source file in a C target.
