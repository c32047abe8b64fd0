package main

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/color"
	"image/png"
	"math"
)

// The binary payloads of the image, audio and blob tools, resources and prompts: made at
// start-up rather than checked in, and small.
var (
	pngImage = makePNG()
	wavAudio = makeWAV()
)

// makePNG draws a 16x16 PNG: a red square with a blue diagonal.
func makePNG() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 16, 16))
	for y := range 16 {
		for x := range 16 {
			c := color.RGBA{R: 220, G: 40, B: 40, A: 255}
			if x == y {
				c = color.RGBA{R: 30, G: 60, B: 200, A: 255}
			}
			img.Set(x, y, c)
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// makeWAV renders 50 ms of a 440 Hz tone as 8 kHz, 16-bit mono PCM in a WAV container.
func makeWAV() []byte {
	const rate, samples = 8000, 400
	data := make([]byte, 2*samples)
	for i := range samples {
		v := int16(8000 * math.Sin(2*math.Pi*440*float64(i)/rate))
		binary.LittleEndian.PutUint16(data[2*i:], uint16(v))
	}
	var b bytes.Buffer
	w := func(v any) { _ = binary.Write(&b, binary.LittleEndian, v) }
	b.WriteString("RIFF")
	w(uint32(36 + len(data)))
	b.WriteString("WAVEfmt ")
	w(uint32(16))       // fmt chunk size
	w(uint16(1))        // PCM
	w(uint16(1))        // mono
	w(uint32(rate))     // sample rate
	w(uint32(rate * 2)) // byte rate
	w(uint16(2))        // block align
	w(uint16(16))       // bits per sample
	b.WriteString("data")
	w(uint32(len(data)))
	b.Write(data)
	return b.Bytes()
}
