/* filecalc: reads a small file and computes over it in memory (the report's "reads
 * a small file from disk and does some processing on it"): CRC-32, word and line
 * counts, and the most frequent byte. */
#include <stdint.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	FILE *f = fopen(argc > 1 ? argv[1] : "data.txt", "rb");
	if (!f) {
		perror("filecalc");
		return 1;
	}
	static unsigned char buf[1 << 16];
	size_t n = fread(buf, 1, sizeof buf, f);
	fclose(f);
	uint32_t table[256];
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
		table[i] = c;
	}
	uint32_t crc = 0xffffffffu;
	unsigned long words = 0, lines = 0, freq[256] = { 0 };
	int in_word = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = buf[i];
		crc = table[(crc ^ c) & 0xff] ^ (crc >> 8);
		freq[c]++;
		lines += c == '\n';
		int space = c == ' ' || c == '\n' || c == '\t';
		words += !space && !in_word;
		in_word = !space;
	}
	int top = 0;
	for (int i = 1; i < 256; i++)
		if (freq[i] > freq[top])
			top = i;
	printf("%zu bytes %lu lines %lu words crc %08x top %02x\n", n, lines, words, crc ^ 0xffffffffu, top);
	return 0;
}
