package web

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/color"
	"image/png"
)

// FaviconPath is where browsers look for a site's icon unless a page names
// another; both pages name this one.
const FaviconPath = "/favicon.ico"

// faviconSize is the icon's width and height in pixels.
const faviconSize = 32

// favicon is a paw print, drawn here rather than kept as a binary file so
// that the repository holds no opaque blob; it is an ICO file holding one
// PNG, which every browser reads.
func favicon() []byte {
	ink := color.NRGBA{R: 0x09, G: 0x69, B: 0xda, A: 0xff}
	type blob struct{ x, y, rx, ry float64 }
	shapes := []blob{
		{16, 21.5, 8, 6.5},                       // the pad
		{6.5, 12.5, 3, 3.6}, {12.5, 7, 3.1, 3.8}, // the toes
		{19.5, 7, 3.1, 3.8}, {25.5, 12.5, 3, 3.6},
	}
	img := image.NewNRGBA(image.Rect(0, 0, faviconSize, faviconSize))
	const samples = 4 // per side: smooth edges
	for y := 0; y < faviconSize; y++ {
		for x := 0; x < faviconSize; x++ {
			in := 0
			for sy := 0; sy < samples; sy++ {
				for sx := 0; sx < samples; sx++ {
					px := float64(x) + (float64(sx)+0.5)/samples
					py := float64(y) + (float64(sy)+0.5)/samples
					for _, b := range shapes {
						dx, dy := (px-b.x)/b.rx, (py-b.y)/b.ry
						if dx*dx+dy*dy <= 1 {
							in++
							break
						}
					}
				}
			}
			c := ink
			c.A = uint8(int(ink.A) * in / (samples * samples))
			img.SetNRGBA(x, y, c)
		}
	}
	var pngData bytes.Buffer
	if err := png.Encode(&pngData, img); err != nil {
		panic(err) // an in-memory image always encodes
	}
	// ICONDIR, one ICONDIRENTRY, then the PNG.
	var ico bytes.Buffer
	le := binary.LittleEndian
	ico.Write(le.AppendUint16(nil, 0)) // reserved
	ico.Write(le.AppendUint16(nil, 1)) // type: icon
	ico.Write(le.AppendUint16(nil, 1)) // one image
	ico.Write([]byte{faviconSize, faviconSize, 0, 0})
	ico.Write(le.AppendUint16(nil, 1))  // colour planes
	ico.Write(le.AppendUint16(nil, 32)) // bits per pixel
	ico.Write(le.AppendUint32(nil, uint32(pngData.Len())))
	ico.Write(le.AppendUint32(nil, 6+16)) // offset of the image
	ico.Write(pngData.Bytes())
	return ico.Bytes()
}
