// SPDX-License-Identifier: Apache-2.0
// Placeholder so an area without sources still forms a library.
